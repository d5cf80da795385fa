// The document of `xpusim plan --format json` (and Python's xpusim.plan): the planner's result
// (predict/llm_plan.hpp) with an offer's price, the time and cost to train a number of tokens,
// and the named constraints (sharding, recompute, sequence parallelism) read into a request.
// In the cost library because the price comes from configs/pricing/; cli/ and python/ both call
// it so the two print the same fields.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "predict/llm_plan.hpp"

namespace xpusim::cost {

// An offer's price per GPU-hour for the plan's device (set = false when no offer is named).
struct PlanPrice {
  bool set = false;
  double usd_per_gpu_h = 0;
  std::string offer, tier;
  std::string date, source;  // the offer's listing date and source
  std::string choice;        // how `cheapest` chose it (empty: the caller named the offer)
};

// What `offer: cheapest` needs besides the device: the job's GPUs and the cluster's GPUs per
// node (0: a TPU slice, billed per chip at one rate whatever its size), and the filters.
struct PlanOfferFilter {
  std::string provider, region;  // empty = any
  int gpus = 0;
  int devices_per_node = 0;
};

// offer: a configs/pricing/ id (empty = no price) or `cheapest` (costmodel/offer_choice.hpp:
// whole instances holding whole nodes, the lowest $/h); tier: its pricing tier (empty = its
// first; on_demand for cheapest). FieldError("offer" | "tier" | "offer_provider" |
// "offer_region") when the offer has no such device or price, or no offer holds the job.
PlanPrice plan_price(const std::string& offer, const std::string& tier, const std::string& device,
                     const PlanOfferFilter& filter = {});

// The constraints a caller fixes by name; 0 or empty = searched.
struct PlanFixedNames {
  int tp = 0, pp = 0, virtual_stages = 0, cp = 0, ep = 0;
  long long micro_batch = 0;
  std::string sharding;           // none | zero1 | zero2 | zero3
  std::string recompute;          // none | selective | full | selective_offloaded
  std::string sequence_parallel;  // true | false
};

// Reads the names into req.fixed (and req.offload_activations); FieldError naming the field.
void apply_plan_fixed(const PlanFixedNames& n, LlmPlanRequest& req);

// Tokens to train: `tokens` when > 0, else 20 per parameter.
double plan_train_tokens(const LlmPlanResult& r, double tokens);

// Seconds and dollars (0 without a price) to train `tokens` with candidate c at `goodput`.
struct PlanTrainCost {
  double seconds = 0, usd = 0;
};
PlanTrainCost plan_train_cost(const parallel::LlmCandidate& c, const PlanPrice& price, int gpus, double tokens,
                              double goodput);

// The JSON body (no schema_version: `xpusim plan --format json` prints it as is): the first
// `top` ranked configurations, the rejected reasons and the time to train `tokens` (0 = 20 per
// parameter) at `goodput`.
nlohmann::json plan_document(const LlmPlanResult& r, const PlanPrice& price, int top, double tokens, double goodput);

}  // namespace xpusim::cost
