// Reference rows: the CSV format of tests/data/reference/published_calibration.csv (one measured
// or published figure per row). Parsed once into ReferenceRow; RFC 4180 quoting (quoted
// fields, doubled quotes, embedded commas and newlines, CRLF). Malformed input is a
// UserError "file:line: column: message"; an empty numeric field is a missing value
// (std::nullopt), which validation reports as a skipped row rather than an error.
#pragma once
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "common/csv.hpp"

namespace xpusim::validation {

struct ReferenceRow {
  int line = 0;                          // line of the row's first character in the file (1 = header)
  std::string source;
  std::string device;                    // configs/devices/ name
  std::optional<int> num_devices;        // GPUs, TPU cores or vCPUs
  std::string setup;                     // configs/systems/ name
  std::string framework;                 // "-pip" / "-compiled" suffix selects a CPU build
  std::string model;                     // zoo name
  std::string dataset;
  std::optional<long long> batch_per_device;
  std::string precision;
  std::string data;                      // synthetic | real
  std::string metric;
  std::optional<double> value;
  std::string unit;
  std::string note;
  // Optional columns (any file may carry them; empty = not applicable or "the tool's choice";
  // /work/shared/reference/README.md defines them).
  std::optional<long long> seq_len;      // sequence length of a Transformer row
  std::optional<long long> global_batch; // samples per optimizer step over all devices
  std::optional<long long> tp, pp, pp_virtual_stages, cp;  // parallel degrees
  std::string sharding;                  // none | zero1 | zero2 | zero3
  std::string recompute;                 // none | selective | selective_offloaded | full
  std::optional<bool> sequence_parallel;
  // The price offer (configs/pricing/ id, catalog/name) of a cost row; empty = the one offer
  // that holds the row's devices (an error naming them when several do).
  std::string offer;
  // The software stack's version (an xpusim column): picks among the profiles that answer to
  // the row's framework (a profile's `versions:`). Empty = the note's "framework version X".
  std::string framework_version;
  bool has_optional() const {
    return seq_len || global_batch || tp || pp || pp_virtual_stages || cp || !sharding.empty() ||
           !recompute.empty() || sequence_parallel || !offer.empty() || !framework_version.empty();
  }
  // The column, or else the version the note states as "framework version X" (the phrase the
  // shared CSVs end their notes with: "framework version pytorch-ngc20.06"), or else the
  // container a README "requires" where it names no results container ("README requires
  // PyTorch 19.05-py3 NGC container or newer" -> "pytorch-ngc19.05": the minimum release the
  // published numbers can have run on, and the one a README dated with it ran on); empty if none.
  std::string stack_version() const;
  // Samples per optimizer step over all devices: the column, or else what the note states as
  // "micro-batch derived = A/B" (A samples per device and optimizer step over B accumulation
  // steps, the phrase of the shared BERT pre-training rows) when A/B is the row's
  // batch_per_device: A x num_devices. Nothing outside the row is read; empty if neither.
  std::optional<long long> step_global_batch() const;
};

// The columns every file has, in the order the reference file uses and the writer emits.
const std::vector<std::string>& reference_columns();
// The optional columns, in the order the writer emits them (only when some row sets one).
const std::vector<std::string>& optional_reference_columns();

// RFC 4180 records: common/csv.hpp (parse_csv, CsvRecord).
using xpusim::CsvRecord;
using xpusim::parse_csv;

// Parses a whole reference file (header required; columns in any order, every required one
// present, optional ones allowed, no unknown ones). `file` names the input in error messages.
std::vector<ReferenceRow> parse_reference_csv(const std::string& text, const std::string& file);
std::vector<ReferenceRow> read_reference_csv(const std::string& path);  // UserError if unreadable

// Writes rows in the reference format (header + rows, fields quoted only when needed).
void write_reference_csv(std::ostream& os, const std::vector<ReferenceRow>& rows);

}  // namespace xpusim::validation
