// Validation: predict every reference row with the engine its device names and compare with
// the reference value (signed error per row, MAPE per device, per model, per metric, per
// framework and overall; OOM rows by agreement). Cost-based metrics (time, dollars and epochs
// to a target, images/s per $/h, ratios to a K80) are computed by the cost model
// (costmodel/cost.hpp) from the predicted throughput. A row that cannot be predicted (unknown
// device, system, model or metric, missing value, engine failure, no price or curve) is kept
// in the result as skipped with its reason, never dropped.
#pragma once
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/output.hpp"
#include "costmodel/convergence.hpp"
#include "costmodel/pricing.hpp"
#include "predict/predict.hpp"
#include "validation/metrics.hpp"
#include "validation/reference_csv.hpp"

namespace xpusim::validation {

// predict() by default; tests inject a fake engine here.
using PredictFn = std::function<StepReport(const PredictRequest&)>;

struct ValidateOptions {
  PredictFn predict;                                           // empty = xpusim::predict
  // Catalogs of the cost-based metrics; null = configs/pricing and configs/convergence
  // (tests pass their own).
  const cost::PriceCatalog* prices = nullptr;
  const cost::ConvergenceCatalog* curves = nullptr;
  std::map<std::string, std::vector<std::string>> overrides;   // device -> KEY=VALUE (calibration overlays)
  // Device of the *_relative_to_k80 baselines: one die, the device's default system
  // (Max Woolf's 2017 study priced and timed one K80 die).
  std::string baseline_device = "k80";
  std::string engine;                                          // non-empty: force this engine for every row
  std::string framework;                                       // non-empty: this profile for every row
  // Profile stem -> KEY=VALUE (a framework fit's calibration overlay): framework.KEY overrides
  // for the rows that profile predicts (validation/framework_overlay.hpp), after `overrides`.
  std::map<std::string, std::vector<std::string>> framework_overrides;
  bool progress = false;
};

struct RowResult {
  ReferenceRow row;
  bool used = false;
  std::string reason;                 // why the row was skipped (empty when used)
  std::string engine;                 // engine that predicted it
  std::optional<double> predicted;
  std::optional<double> error_pct;    // all metrics but oom
  std::optional<bool> match;          // oom
};

struct GroupError {
  std::string key;
  int rows = 0;
  double mape_pct = 0;
  double mean_error_pct = 0;          // signed: the bias of the model on this group
};

inline constexpr const char* kUnspecifiedFramework = "unspecified";

struct ValidationResult {
  std::string reference;              // where the rows came from
  std::vector<RowResult> rows;        // in input order
  std::optional<double> mape_pct;     // over every row with an error_pct
  int rows_used = 0, rows_skipped = 0, oom_matches = 0, oom_total = 0;
  // Sorted by key. by_framework groups by the CSV's framework column (kUnspecifiedFramework
  // when empty): the same device can be fast in one framework and slow in another.
  std::vector<GroupError> by_device, by_model, by_metric, by_framework;
};

// Maps a row to the prediction request it stands for (no checks; see validate_rows).
PredictRequest request_for_row(const ReferenceRow& row);

ValidationResult validate_rows(const std::vector<ReferenceRow>& rows, const ValidateOptions& opts,
                               const std::string& reference_name = "");
// Recomputes the summary from result.rows (used after filtering or merging results).
void summarize(ValidationResult& r);

nlohmann::json validation_json(const ValidationResult& r);
// table: rows, skipped rows with reasons, then MAPE by device, model, metric and overall.
// csv: one line per row (same fields as the JSON rows).
void print_validation(std::ostream& os, const ValidationResult& r, OutputFormat f);

}  // namespace xpusim::validation
