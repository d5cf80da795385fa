// plan_llm on a TPU slice (issue 32): the cluster names a slice type (parallel/tpu_cluster.hpp),
// the device YAML gives the chip (MXU peak, HBM, ICI torus, host and DCN figures; sim/tpu), a
// framework profile of the closed-form planners (maxtext; engines: analytical) the sustained
// MXU and HBM fractions, and parallel/tpu_llm.hpp prices and ranks the configurations.
// Counts (LlmPlanRequest::gpus, LlmPlanResult::gpus) are chips; nodes are TPU hosts.
#pragma once
#include "parallel/tpu_cluster.hpp"
#include "predict/llm_plan.hpp"

namespace xpusim {

// FieldError naming the field: cluster (a slice the generation does not offer), gpus (a chip
// count that is neither the slice nor a multiple of it), tp (larger than a slice, or not
// mapping onto its torus), device, precision, pp / cp / ep (not modelled on TPUs), sharding.
LlmPlanResult plan_llm_tpu(const LlmPlanRequest& r, const parallel::TpuClusterName& t);

}  // namespace xpusim
