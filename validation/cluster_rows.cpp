// Cluster rows through the large-model planner (cluster_rows.hpp).
#include "validation/cluster_rows.hpp"

#include "common/error.hpp"
#include "predict/llm_plan.hpp"

namespace xpusim::validation {

double predict_cluster_row(const ReferenceRow& row, bool step_time, const std::string& framework,
                           const std::vector<std::string>& overrides) {
  if (!row.step_global_batch()) throw UserError("global_batch: missing (a cluster row needs the sequences per step)");
  LlmPlanRequest q;
  q.model = row.model;
  q.cluster = row.setup;
  q.device = row.device;
  q.framework = framework;
  q.overrides = overrides;
  q.gpus = row.num_devices.value_or(0);
  q.global_batch = *row.step_global_batch();
  q.seq_len = row.seq_len.value_or(0);
  q.precision = row.precision;
  q.keep = 1;
  auto& f = q.fixed;
  if (row.tp) f.tp = static_cast<int>(*row.tp);
  if (row.pp) f.pp = static_cast<int>(*row.pp);
  if (row.pp_virtual_stages) f.virtual_stages = static_cast<int>(*row.pp_virtual_stages);
  if (row.cp) f.cp = static_cast<int>(*row.cp);
  // On a TPU slice batch_per_device is MaxText's per-chip batch (tpu_llm_plan.hpp).
  if (row.batch_per_device) f.micro_batch = *row.batch_per_device;
  if (!row.sharding.empty()) {
    parallel::ZeroStage z;
    if (!parallel::parse_zero_stage(row.sharding, z)) throw UserError("sharding: unknown '" + row.sharding + "'");
    f.zero = z;
  }
  if (!row.recompute.empty()) {
    parallel::Recompute r;
    // Offloaded activations: selective remat whose saved tensors go to the host; the TPU
    // planner prices the host traffic, the GPU planner does not (as selective).
    q.offload_activations = row.recompute == "selective_offloaded";
    const std::string rc = row.recompute == "selective_offloaded" ? "selective" : row.recompute;
    if (!parallel::parse_recompute(rc, r)) throw UserError("recompute: unknown '" + row.recompute + "'");
    f.recompute = r;
  }
  if (row.sequence_parallel) f.sequence_parallel = *row.sequence_parallel;
  LlmPlanResult plan;
  try {
    plan = plan_llm(q);
  } catch (const UserError& e) {
    throw UserError(std::string("planner: ") + e.what());
  }
  if (plan.search.ranked.empty()) {
    std::string why;
    for (const auto& r : plan.search.rejected) why += (why.empty() ? "" : "; ") + r.example;
    throw UserError("planner: the row's configuration does not fit or divide: " + why);
  }
  const parallel::LlmCandidate& best = plan.search.ranked.front();
  if (step_time) return best.time.step_s;
  if (row.unit == "tokens/s") return best.tokens_per_s;
  return best.tokens_per_s / static_cast<double>(plan.seq_len);
}

}  // namespace xpusim::validation
