// The metrics a reference row can carry, and the arithmetic that compares a prediction with
// a reference value: signed percentage error, MAPE, and OOM agreement.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace xpusim::validation {

enum class MetricKind {
  train_throughput,                  // samples/s (or tokens/s, as the unit says) of the whole job
  step_time_s,                       // seconds per optimizer step
  epoch_seconds_median_after_first,  // steady-state epoch
  first_epoch_seconds,               // steady-state epoch + one-off compile time
  oom,                               // 1 = did not fit in device memory
  time_relative_to_k80,              // this placement's epoch time / one K80's
  cost_relative_to_k80,              // this placement's cost per epoch / one K80's
  epochs_to_top1,                    // accuracy curves of the cost model
  epochs_to_top5,
  cost_to_top1,                      // USD
  cost_to_top5,
  hours_to_top1,
  hours_to_top5,
  minutes_to_top1,
  minutes_to_top5,
  images_per_s_per_usd_per_h,
  infer_throughput,                  // samples/s of forward passes (predicted with task inference)
  // Monitoring readings of a training step, as the tools report them (predict/monitoring.hpp):
  gpu_util_pct_smi,       // nvidia-smi utilization.gpu: % of the step a kernel is resident
  gpu_mem_ctrl_util_pct,  // nvidia-smi utilization.memory: % of the step the memory controller is busy
  gpu_mem_used_bytes,     // nvidia-smi memory.used, per GPU (allocator policy and CUDA context)
  gpu_power_w,            // nvidia-smi power.draw: one board's average power over the step
};

struct Metric {
  MetricKind kind = MetricKind::train_throughput;
  std::optional<double> target;  // accuracy target of *_to_top{1,5}_X metrics, in (0, 1]
  std::string name;              // as written in the CSV
};

// nullopt when the name is not a known metric (the row is then skipped with a reason).
std::optional<Metric> parse_metric(const std::string& name);
// Every metric name pattern, for messages and docs.
std::string metric_names();

// The units a row of this metric may give in its `unit` column (the first is the canonical
// one). An empty unit column is allowed and means the canonical unit.
const std::vector<std::string>& metric_units(MetricKind k);

bool is_top5(MetricKind k);

// Signed error in percent: 100 * (predicted - reference) / reference. Positive means the
// model over-predicts. The reference must be non-zero (callers skip rows where it is not).
double error_pct(double predicted, double reference);
// Mean absolute percentage error over signed errors; nullopt for an empty set.
std::optional<double> mape_pct(const std::vector<double>& errors_pct);

}  // namespace xpusim::validation
