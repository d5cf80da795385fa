// The plan document (plan_document.hpp): one builder for `xpusim plan --format json` and
// Python's xpusim.plan, so their field names and numbers cannot drift apart.
#include "costmodel/plan_document.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "costmodel/offer_choice.hpp"
#include "costmodel/pricing.hpp"
#include "parallel/llm_plan.hpp"

namespace xpusim::cost {

using parallel::LlmCandidate;

namespace {

PlanPrice cheapest_plan_price(const std::string& tier_text, const std::string& device, const PlanOfferFilter& f) {
  const PriceCatalog& cat = default_price_catalog();
  OfferNeed need;
  need.device = device;
  need.count = f.gpus;
  // A GPU node stays inside one instance; a TPU slice is billed per chip (gcp_2026.yaml), so
  // any size of offer of its chip prices it.
  need.node_devices = f.devices_per_node > 0 ? f.devices_per_node : 1;
  need.whole_instances = true;  // the plan bills per GPU: the job must be whole instances
  need.provider = f.provider;
  need.region = f.region;
  if (!tier_text.empty() && !parse_tier(tier_text, need.tier))
    throw FieldError("tier", "unknown tier '" + tier_text + "' (" + tier_choices() + ")");
  const OfferChoice ch = cheapest_offer(cat, need);
  const PriceOffer& o = cat.get(ch.id);
  PlanPrice p;
  p.set = true;
  p.usd_per_gpu_h = ch.usd_per_h / f.gpus;
  p.offer = ch.id;
  p.tier = tier_name(need.tier);
  p.date = o.date;
  p.source = o.source;
  p.choice = ch.summary;
  return p;
}

}  // namespace

PlanPrice plan_price(const std::string& offer, const std::string& tier_name_in, const std::string& device,
                     const PlanOfferFilter& filter) {
  PlanPrice p;
  if (offer.empty()) {
    if (!filter.provider.empty()) throw FieldError("offer_provider", "only with offer cheapest");
    if (!filter.region.empty()) throw FieldError("offer_region", "only with offer cheapest");
    return p;
  }
  if (offer == kCheapestOffer) return cheapest_plan_price(tier_name_in, device, filter);
  if (!filter.provider.empty()) throw FieldError("offer_provider", "only with offer cheapest (a named offer has its own)");
  if (!filter.region.empty()) throw FieldError("offer_region", "only with offer cheapest (a named offer has its own)");
  const PriceCatalog& cat = default_price_catalog();
  const PriceOffer& o = cat.get(offer);
  int gpus = 0;
  for (const auto& it : o.contains)
    if (it.what == device) gpus += it.count;
  if (gpus == 0) throw FieldError("offer", "offer '" + offer + "' contains no " + device);
  PricingTier tier;
  if (tier_name_in.empty()) {
    const auto tiers = cat.tiers_of(offer);
    if (tiers.empty()) throw FieldError("offer", "offer '" + offer + "' has no price");
    if (!parse_tier(tiers.front(), tier)) throw FieldError("tier", "unknown tier '" + tiers.front() + "'");
  } else if (!parse_tier(tier_name_in, tier)) {
    throw FieldError("tier", "unknown tier '" + tier_name_in + "'");
  }
  p.set = true;
  p.usd_per_gpu_h = cat.usd_per_h(offer, tier) / gpus;
  p.offer = offer;
  p.tier = tier_name(tier);
  p.date = o.date;
  p.source = o.source;
  return p;
}

void apply_plan_fixed(const PlanFixedNames& n, LlmPlanRequest& req) {
  auto& fx = req.fixed;
  if (n.tp) fx.tp = n.tp;
  if (n.pp) fx.pp = n.pp;
  if (n.virtual_stages) fx.virtual_stages = n.virtual_stages;
  if (n.cp) fx.cp = n.cp;
  if (n.ep) fx.ep = n.ep;
  if (n.micro_batch) fx.micro_batch = n.micro_batch;
  if (!n.sharding.empty()) {
    parallel::ZeroStage z;
    if (!parallel::parse_zero_stage(n.sharding, z))
      throw FieldError("sharding", "unknown '" + n.sharding + "' (none, zero1, zero2, zero3)");
    fx.zero = z;
  }
  if (!n.recompute.empty()) {
    parallel::Recompute r;
    // selective_offloaded: selective remat with the saved tensors on the host (TPU planner).
    req.offload_activations = n.recompute == "selective_offloaded";
    if (!parallel::parse_recompute(req.offload_activations ? "selective" : n.recompute, r))
      throw FieldError("recompute", "unknown '" + n.recompute + "' (none, selective, full)");
    fx.recompute = r;
  }
  if (!n.sequence_parallel.empty()) {
    if (n.sequence_parallel != "true" && n.sequence_parallel != "false")
      throw FieldError("sequence_parallel", "true or false, got '" + n.sequence_parallel + "'");
    fx.sequence_parallel = n.sequence_parallel == "true";
  }
}

double plan_train_tokens(const LlmPlanResult& r, double tokens) {
  return tokens > 0 ? tokens : 20.0 * static_cast<double>(r.parameters);
}

PlanTrainCost plan_train_cost(const LlmCandidate& c, const PlanPrice& price, int gpus, double tokens, double goodput) {
  const double seconds = tokens / (c.tokens_per_s * goodput);
  return {seconds, price.set ? seconds / 3600.0 * price.usd_per_gpu_h * gpus : 0.0};
}

namespace {

nlohmann::json candidate_json(const LlmCandidate& c, const PlanPrice& price, int gpus) {
  const auto& k = c.config;
  nlohmann::json j;
  j["dp"] = k.dp, j["tp"] = k.tp, j["pp"] = k.pp, j["pp_virtual_stages"] = k.virtual_stages, j["cp"] = k.cp;
  j["ep"] = k.ep, j["micro_batch"] = k.micro_batch, j["sharding"] = parallel::zero_stage_name(k.zero);
  j["recompute"] = parallel::recompute_name(k.recompute), j["sequence_parallel"] = k.sequence_parallel;
  j["memory_per_gpu_bytes"] = c.memory.total();
  j["memory_bytes"] = {{"weights", c.memory.weights},         {"fp8_weights", c.memory.fp8_weights},
                       {"gradients", c.memory.gradients},
                       {"optimizer", c.memory.optimizer},     {"activations", c.memory.activations},
                       {"logits", c.memory.logits},           {"temporary", c.memory.temporary}};
  j["step_time_s"] = c.time.step_s;
  j["step_breakdown_s"] = {{"compute", c.time.compute_s},     {"bubble", c.time.bubble_s},
                           {"tp_comm", c.time.tp_comm_s},     {"pp_comm", c.time.pp_comm_s},
                           {"cp_comm", c.time.cp_comm_s},     {"ep_comm", c.time.ep_comm_s},
                           {"dp_comm", c.time.dp_comm_s},     {"optimizer", c.time.optimizer_s}};
  j["moe_load_factor"] = c.time.moe_load_factor;
  j["tokens_per_s"] = c.tokens_per_s;
  j["mfu"] = c.mfu, j["hfu"] = c.hfu;
  if (price.set) {
    j["usd_per_h"] = price.usd_per_gpu_h * gpus;
    j["usd_per_million_tokens"] = price.usd_per_gpu_h * gpus / 3600.0 / c.tokens_per_s * 1e6;
  }
  return j;
}

}  // namespace

nlohmann::json plan_document(const LlmPlanResult& r, const PlanPrice& price, int top, double tokens_in,
                             double goodput) {
  const double tokens = plan_train_tokens(r, tokens_in);
  const auto& ranked = r.search.ranked;
  const size_t shown = std::min(ranked.size(), static_cast<size_t>(std::max(top, 0)));
  nlohmann::json j;
  j["model"] = r.model, j["parameters"] = r.parameters, j["cluster"] = r.cluster, j["device"] = r.device;
  j["framework"] = r.framework, j["precision"] = r.precision, j["gpus"] = r.gpus, j["nodes"] = r.nodes;
  j["seq_len"] = r.seq_len, j["global_batch"] = r.global_batch, j["usable_memory_per_gpu_bytes"] = r.memory_bytes;
  j["configurations_enumerated"] = r.search.enumerated, j["configurations_evaluated"] = r.search.evaluated;
  j["configurations_fitting"] = ranked.size();
  if (price.set) {
    j["offer"] = {{"id", price.offer},   {"tier", price.tier},     {"usd_per_gpu_h", price.usd_per_gpu_h},
                  {"date", price.date},  {"source", price.source}};
    if (!price.choice.empty()) j["offer"]["choice"] = price.choice;
  }
  nlohmann::json best = nlohmann::json::array();
  for (size_t i = 0; i < shown; ++i) best.push_back(candidate_json(ranked[i], price, r.gpus));
  j["ranked"] = best;
  nlohmann::json rej = nlohmann::json::array();
  for (const auto& x : r.search.rejected) rej.push_back({{"reason", x.reason}, {"count", x.count}, {"example", x.example}});
  j["rejected"] = rej;
  if (!ranked.empty()) {
    const PlanTrainCost t = plan_train_cost(ranked.front(), price, r.gpus, tokens, goodput);
    j["train"] = {{"tokens", tokens}, {"goodput", goodput}, {"days", t.seconds / 86400.0}};
    if (price.set) j["train"]["usd"] = t.usd;
  }
  return j;
}

}  // namespace xpusim::cost
