// Data outputs of every command from one source: a command builds its results as JSON
// records, and both --format json and --format csv are written from them, so the two formats
// carry the same field names and the same numbers (docs/outputs.md).
//   JSON: one top-level object per document, with schema_version and xpusim_version.
//   CSV:  one header row, then one row per record. Nested objects become dotted columns
//         (utilization.mxu), as pandas.json_normalize(sep=".") names them; arrays of
//         scalars are one cell holding their JSON text; arrays of objects (and empty arrays)
//         are other tables (JSON only). Missing values (null) are empty cells; numbers are written in the
//         shortest form that reads back to the same double.
#pragma once
#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace xpusim {

// Bumped when a field is renamed or removed or changes meaning (adding fields keeps it).
inline constexpr int kOutputSchemaVersion = 2;

// `body` (an object) with schema_version and xpusim_version added.
nlohmann::json output_document(nlohmann::json body);
// print_json(output_document(body)).
void print_json_document(std::ostream& os, const nlohmann::json& body);

// The shortest decimal text that parses back to exactly `v` (std::to_chars); integral
// values below 2^53 without a decimal point. Not finite: "nan", "inf", "-inf".
std::string fmt_roundtrip(double v);

// A record's CSV columns and cells, in the record's key order (objects nested with '.').
struct FlatField {
  std::string column;
  std::string cell;
};
std::vector<FlatField> flatten_record(const nlohmann::json& record);

// CSV of records (a JSON array of objects): the header is the union of their columns, `leading` ones first (those
// present), then the others in first-seen order. A record without a column gets an empty cell.
void print_csv_records(std::ostream& os, const nlohmann::json& records,
                       const std::vector<std::string>& leading = {});

}  // namespace xpusim
