// Reference rows whose setup names a cluster (configs/clusters/): a decoder trained under the
// row's parallel columns (tp, pp, pp_virtual_stages, cp, sharding, recompute,
// sequence_parallel; batch_per_device = the micro-batch; empty = the planner's best), priced
// in closed form by the large-model planner (predict/llm_plan.hpp, docs/parallel.md).
#pragma once
#include <string>
#include <vector>

#include "validation/reference_csv.hpp"

namespace xpusim::validation {

// tokens/s (unit tokens/s), sequences/s (other throughput units) or, with `step_time`, seconds
// per step of the fastest configuration the row's columns allow. UserError with the reason
// when the row cannot be predicted (missing global_batch, an unknown sharding, no
// configuration that fits or divides, a planner error).
double predict_cluster_row(const ReferenceRow& row, bool step_time, const std::string& framework,
                           const std::vector<std::string>& overrides);

}  // namespace xpusim::validation
