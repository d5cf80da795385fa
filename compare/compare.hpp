// Runs a study: one row per option x target. Throughput comes from the study (given), from
// predict() (simulated engines) or from a real backend (measured); a failing prediction
// becomes the row's error and the other rows still compute.
#pragma once
#include <nlohmann/json.hpp>

#include <atomic>

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/output.hpp"
#include "compare/study.hpp"
#include "predict/predict.hpp"

namespace xpusim::cost {

struct CompareRow {
  std::string option, target, model, dataset, device, system, precision, data, offer, pricing, throughput_source;
  // The offer's listing date and source (every price is dated and sourced), the instances of it
  // the row pays for, and how it was chosen (`offer: cheapest`; empty when the study named it).
  std::string offer_date, offer_source, offer_choice;
  int offer_instances = 1;
  int count = 1;
  Task task = Task::train;      // in the JSON only when inference (training rows keep their shape)
  int64_t batch_per_device = 0;
  int64_t global_batch = 0;
  double target_accuracy = 0;   // 0 = fixed epochs
  std::string target_metric;
  std::string curve;
  std::string bottleneck;       // resource that bounded the step (predicted/measured); empty when given
  // Token-wise sequence models only (see ModelSpec::tokens_per_sample); absent otherwise.
  std::optional<double> throughput_tokens_per_s;
  std::optional<double> throughput_samples_per_s, price_usd_per_h, samples_per_s_per_usd_per_h, epochs_to_target,
      hours_to_target, billed_hours, cost_to_target_usd, energy_kwh, breakeven_runs;
  // Average power the energy is computed from, W, and where it comes from: "modelled" (the
  // prediction's power_w: devices at their modelled utilisation + host share, docs/power.md),
  // "option" (the option's power_w), "offer" (the offer's nameplate power: given or measured
  // throughput, or a device that states no power). Absent when no energy is computed.
  std::optional<double> power_w;
  std::string power_source;
  // What the monitoring tools would show during the option's step (predict/monitoring.hpp;
  // issue 31): nvidia-smi's utilization.gpu, memory.used per GPU and one board's power.draw, and
  // the host CPU as `top` averages it. Predicted GPU options only; absent otherwise.
  std::optional<double> gpu_util_pct_smi, gpu_mem_used_bytes, gpu_power_w, cpu_util_pct;
  // One meaning each, as in sweep rows: `error` only when the row's prediction, measurement or
  // placement failed; `note` why other fields are null (does not fit, synthetic data, no
  // convergence curve, target not reached).
  std::string error;
  std::string note;
  // What a reader is told about the row: the failure, else the note (empty: neither).
  const std::string& message() const { return error.empty() ? note : error; }
  nlohmann::json to_json() const;
};

struct CompareResult {
  std::string study, description, source;
  std::vector<CompareRow> rows;
  nlohmann::json to_json() const;
  // Run bookkeeping (not part of the output): stopped early, rows taken from an earlier run,
  // rows the study has in all.
  bool interrupted = false;
  size_t resumed_rows = 0, total_rows = 0;
};

// Step report for a request; the default calls predict(). Tests inject a fake.
using ThroughputFn = std::function<StepReport(const PredictRequest&)>;

// Fills a row's price, samples/s per $/h and, given a target, epochs, hours, billed dollars and
// energy to it, from the row's throughput_samples_per_s, global_batch and power_w (the
// prediction's modelled power, when set on entry): cost_to_target (target_cost.hpp) on those,
// copied into the row. A row that has a note keeps it.
void price_row(const StudyOption& o, const StudyTarget* target, CompareRow& row);

// Interrupt and resume. `stop` (set asynchronously, e.g. by SIGINT) ends the run after the
// current row: the result holds the finished rows and `interrupted`, and no buy-vs-rent
// figures (they need every row). `done` are rows of an earlier run of the same study, a
// prefix in study order, taken as they are instead of recomputed (UserError when a row's
// option or target is not the study's at that position). `on_row` sees the result after each
// newly finished row (to keep a file up to date).
struct StudyRunControl {
  const std::atomic<bool>* stop = nullptr;
  std::vector<CompareRow> done;
  std::function<void(const CompareResult&)> on_row;
};

CompareResult run_study(const Study& s, const ThroughputFn& fn = {}, bool progress = false,
                        const StudyRunControl& control = {});

// Row files (`compare --out FILE`, --resume): every field of every row with exact numbers
// (shortest round-trip), CSV or JSON, plus the inputs fingerprint and whether the run
// finished. CSV: a first line "# xpusim compare rows v2 inputs=HEX complete=true|false",
// then a header of the JSON row keys. JSON: the JSON output with "row_file" metadata.
struct CompareRowFile {
  std::string inputs;  // fingerprint of the inputs that produced the rows
  bool complete = false;
  std::vector<CompareRow> rows;
  // Why the rows cannot be trusted (no rows_crc32c, or rows that do not match it), or empty.
  std::string rows_problem;
};
// Fingerprint of what a study's rows depend on: the study file's bytes, every file under the
// configuration directory (devices, systems, models, prices, curves, frameworks) and the
// xpusim version.
std::string compare_inputs_fingerprint(const Study& s);
void write_compare_rows(std::ostream& os, const CompareResult& r, OutputFormat f, const std::string& inputs,
                        bool complete);
// UserError "PATH: ..." naming the line (CSV) or row (JSON) when the file is not a row file.
CompareRowFile read_compare_rows(const std::string& path, OutputFormat f);

// Output: JSON (to_json) and CSV (the same fields, one line per row); table/Markdown: the
// conclusion per target (compare_summary.hpp), then the columns that hold a value.
// SVG or HTML chart: one bar chart per metric (compare_chart.cpp).
// `all_fields_hint` says (in the caller's words: cli/ names its flag) where the fields a table
// leaves out are; empty = "the CSV and JSON outputs".
void print_compare(std::ostream& os, const CompareResult& r, OutputFormat f, const std::string& all_fields_hint = "");
std::string compare_chart_svg(const CompareResult& r);
std::string compare_chart_html(const CompareResult& r);

}  // namespace xpusim::cost
