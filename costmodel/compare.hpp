// Runs a study: one row per option x target. Throughput comes from the study (given), from
// predict() (simulated engines) or from a real backend (measured); a failing prediction
// becomes the row's error and the other rows still compute.
#pragma once
#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/output.hpp"
#include "costmodel/study.hpp"
#include "predict/predict.hpp"

namespace xpusim::cost {

struct CompareRow {
  std::string option, target, model, dataset, device, system, precision, data, offer, pricing, throughput_source;
  int count = 1;
  Task task = Task::train;      // in the JSON only when inference (training rows keep their shape)
  int64_t batch_per_device = 0;
  int64_t global_batch = 0;
  double target_accuracy = 0;   // 0 = fixed epochs
  std::string target_metric;
  std::string curve;
  std::optional<double> throughput_samples_per_s, price_usd_per_h, samples_per_s_per_usd_per_h, epochs_to_target,
      hours_to_target, billed_hours, cost_to_target_usd, energy_kwh, breakeven_runs;
  std::string error;            // why fields are missing (prediction failed, target not reached, ...)
  nlohmann::json to_json() const;
};

struct CompareResult {
  std::string study, description, source;
  std::vector<CompareRow> rows;
  nlohmann::json to_json() const;
};

// Step report for a request; the default calls predict(). Tests inject a fake.
using ThroughputFn = std::function<StepReport(const PredictRequest&)>;

// Fills a row's price, samples/s per $/h and, given a target, epochs, hours, billed dollars and
// energy to it, from the row's throughput_samples_per_s and global_batch (the part of a study
// row that follows the throughput). An option without an offer gets no dollars. Used by
// run_study and by design-space sweeps (sweep/), so both price points the same way.
void price_row(const StudyOption& o, const StudyTarget* target, CompareRow& row);

CompareResult run_study(const Study& s, const ThroughputFn& fn = {}, bool progress = false);

// Output: table/markdown/csv (one line per row), JSON (to_json), SVG or HTML chart.
void print_compare(std::ostream& os, const CompareResult& r, OutputFormat f);
std::string compare_chart_svg(const CompareResult& r);
std::string compare_chart_html(const CompareResult& r);

}  // namespace xpusim::cost
