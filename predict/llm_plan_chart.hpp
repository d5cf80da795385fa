// The Pareto chart of `xpusim plan --chart` (docs/parallel.md): every fitting configuration
// of a job at a few GPU counts as (time to train, cost to train) on log axes, one series per
// GPU count, and the Pareto front (no other point both faster and cheaper) as a line. At one
// GPU count time and cost are proportional (same GPUs, same price per hour), so the trade-off
// the chart shows is the one between GPU counts: more GPUs train sooner at a lower efficiency.
#pragma once
#include <string>
#include <vector>

#include "predict/llm_plan.hpp"

namespace xpusim {

struct PlanChartPoint {
  int gpus = 0;
  double train_days = 0;   // wall time to train the tokens at the goodput
  double cost = 0;         // US$ with an offer, else GPU-hours
  std::string label;       // the configuration (llm_config_label) for the tooltip
};

// Points of a plan's fitting configurations: tokens to train, goodput in (0, 1], and the
// price per GPU-hour (0: the cost axis is GPU-hours).
std::vector<PlanChartPoint> plan_chart_points(const LlmPlanResult& r, double tokens, double goodput,
                                              double usd_per_gpu_h);

// Indices of the Pareto front of `pts` (lowest time first; a point is on it when no point is
// at most as slow and strictly cheaper, or strictly faster and at most as expensive).
std::vector<size_t> pareto_front(const std::vector<PlanChartPoint>& pts);

// The SVG. `title` names the job; `usd` says whether the cost is dollars or GPU-hours.
// Points of one GPU count falling on the same pixel are drawn once (the chart of a 1,024-GPU
// plan holds tens of thousands of configurations).
std::string plan_pareto_svg(const std::string& title, const std::vector<PlanChartPoint>& pts, bool usd);

}  // namespace xpusim
