#include "validation/metrics.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace xpusim::validation {

namespace {
struct Fixed {
  const char* name;
  MetricKind kind;
};
const Fixed kFixed[] = {
    {"train_throughput", MetricKind::train_throughput},
    {"step_time_s", MetricKind::step_time_s},
    {"epoch_seconds_median_after_first", MetricKind::epoch_seconds_median_after_first},
    {"first_epoch_seconds", MetricKind::first_epoch_seconds},
    {"oom", MetricKind::oom},
    {"time_relative_to_k80", MetricKind::time_relative_to_k80},
    {"cost_relative_to_k80", MetricKind::cost_relative_to_k80},
    {"images_per_s_per_usd_per_h", MetricKind::images_per_s_per_usd_per_h},
    {"infer_throughput", MetricKind::infer_throughput},
    {"gpu_util_pct_smi", MetricKind::gpu_util_pct_smi},
    {"gpu_mem_ctrl_util_pct", MetricKind::gpu_mem_ctrl_util_pct},
    {"gpu_mem_used_bytes", MetricKind::gpu_mem_used_bytes},
    {"gpu_power_w", MetricKind::gpu_power_w},
};
// Metrics with an accuracy target suffix: <prefix><X>, X a fraction such as 0.757.
const Fixed kTargeted[] = {
    {"epochs_to_top1_", MetricKind::epochs_to_top1}, {"epochs_to_top5_", MetricKind::epochs_to_top5},
    {"cost_to_top1_", MetricKind::cost_to_top1},     {"cost_to_top5_", MetricKind::cost_to_top5},
    {"hours_to_top1_", MetricKind::hours_to_top1},   {"hours_to_top5_", MetricKind::hours_to_top5},
    {"minutes_to_top1_", MetricKind::minutes_to_top1}, {"minutes_to_top5_", MetricKind::minutes_to_top5},
};
}  // namespace

std::optional<Metric> parse_metric(const std::string& name) {
  for (const auto& f : kFixed)
    if (name == f.name) return Metric{f.kind, std::nullopt, name};
  for (const auto& f : kTargeted) {
    std::string prefix = f.name;
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    std::string x = name.substr(prefix.size());
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(x.c_str(), &end);
    if (end == x.c_str() || *end != '\0' || errno == ERANGE || !(v > 0 && v <= 1)) return std::nullopt;
    return Metric{f.kind, v, name};
  }
  return std::nullopt;
}

std::string metric_names() {
  std::string s;
  for (const auto& f : kFixed) s += (s.empty() ? "" : ", ") + std::string(f.name);
  for (const auto& f : kTargeted) s += ", " + std::string(f.name) + "X";
  return s;
}

const std::vector<std::string>& metric_units(MetricKind k) {
  static const std::vector<std::string> throughput{"samples/s", "images/s", "sequences/s", "examples/s", "tokens/s"};
  static const std::vector<std::string> seconds{"s", "seconds"};
  static const std::vector<std::string> flag{"bool", "0/1"};
  static const std::vector<std::string> ratio{"ratio", "x"};
  static const std::vector<std::string> epochs{"epochs"};
  static const std::vector<std::string> usd{"usd", "USD"};
  static const std::vector<std::string> hours{"h", "hours"};
  static const std::vector<std::string> minutes{"min", "minutes"};
  static const std::vector<std::string> per_dollar{"(images/s)/(usd/h)", "(samples/s)/(usd/h)"};
  static const std::vector<std::string> percent{"%", "pct"};
  static const std::vector<std::string> bytes{"bytes", "B"};
  static const std::vector<std::string> watts{"W"};
  switch (k) {
    case MetricKind::train_throughput:
    case MetricKind::infer_throughput: return throughput;
    case MetricKind::step_time_s:
    case MetricKind::epoch_seconds_median_after_first:
    case MetricKind::first_epoch_seconds: return seconds;
    case MetricKind::oom: return flag;
    case MetricKind::time_relative_to_k80:
    case MetricKind::cost_relative_to_k80: return ratio;
    case MetricKind::epochs_to_top1:
    case MetricKind::epochs_to_top5: return epochs;
    case MetricKind::cost_to_top1:
    case MetricKind::cost_to_top5: return usd;
    case MetricKind::hours_to_top1:
    case MetricKind::hours_to_top5: return hours;
    case MetricKind::minutes_to_top1:
    case MetricKind::minutes_to_top5: return minutes;
    case MetricKind::images_per_s_per_usd_per_h: return per_dollar;
    case MetricKind::gpu_util_pct_smi:
    case MetricKind::gpu_mem_ctrl_util_pct: return percent;
    case MetricKind::gpu_mem_used_bytes: return bytes;
    case MetricKind::gpu_power_w: return watts;
  }
  return ratio;
}

bool is_top5(MetricKind k) {
  return k == MetricKind::epochs_to_top5 || k == MetricKind::cost_to_top5 || k == MetricKind::hours_to_top5 ||
         k == MetricKind::minutes_to_top5;
}

double error_pct(double predicted, double reference) { return 100.0 * (predicted - reference) / reference; }

std::optional<double> mape_pct(const std::vector<double>& e) {
  if (e.empty()) return std::nullopt;
  double s = 0;
  for (double v : e) s += std::fabs(v);
  return s / static_cast<double>(e.size());
}

}  // namespace xpusim::validation
