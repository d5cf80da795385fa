// Plan points of a sweep (plan_point.hpp): the same request and the same numbers as
// `xpusim plan` (predict/llm_plan.hpp for the search, costmodel/plan_document.hpp for the price
// and the time and cost to train), one row per point with the best configuration.
#include "sweep/plan_point.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"
#include "common/output.hpp"
#include "parallel/cluster.hpp"
#include "parallel/llm_plan.hpp"
#include "parallel/tpu_cluster.hpp"

namespace xpusim::sweep {

namespace {

constexpr long long kMaxSequences = 2147483647;  // as plan's --global-batch and --micro-batch

long long whole(const std::string& field, const std::string& v, long long lo, long long hi) {
  const long long x = parse_axis_integer(field, v);
  if (x < lo || x > hi)
    throw FieldError(field, "'" + v + "' is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return x;
}

double real(const std::string& field, const std::string& v, double lo, double hi) {
  double x = 0;
  size_t used = 0;
  try {
    x = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v.size()) throw FieldError(field, "'" + v + "' is not a number");
  if (!(x >= lo && x <= hi)) throw FieldError(field, "'" + v + "' is outside [" + fmt_g(lo, 6) + ", " + fmt_g(hi, 6) + "]");
  return x;
}

// A fix_* name is checked the moment it is read (apply_plan_fixed's own check), blamed on the
// sweep's field rather than on plan's flag.
void check_fixed_name(const std::string& field, const cost::PlanFixedNames& n) {
  LlmPlanRequest scratch;
  try {
    cost::apply_plan_fixed(n, scratch);
  } catch (const FieldError& e) {
    throw FieldError(field, e.message());
  }
}

AxisField degree(const char* key, const char* what, int cost::PlanFixedNames::*member) {
  return {key, what, true, [key, member](PointRequest& r, const std::string& v) {
            r.plan_fixed.*member = static_cast<int>(whole(key, v, 1, 65536));
          }};
}

}  // namespace

// The request fields of a plan point: `xpusim plan`'s flags, with fix_* for its --tp, --pp, ...
// (the result fields tp, pp, ... name the best configuration's degrees).
const std::vector<AxisField>& plan_axis_fields() {
  static const std::vector<AxisField> fields = {
      {"model", "decoder: zoo name or YAML with an llm shape", false,
       [](PointRequest& r, const std::string& v) { r.plan.model = v; }},
      {"cluster", "cluster (configs/clusters/), YAML path, or TPU slice (v5e-256, ...)", false,
       [](PointRequest& r, const std::string& v) { r.plan.cluster = v; }},
      {"device", "device of the cluster's nodes (default: the cluster's)", false,
       [](PointRequest& r, const std::string& v) { r.plan.device = v; }},
      {"gpus", "GPUs of the job (TPU slice: chips, default the slice's)", true,
       [](PointRequest& r, const std::string& v) { r.plan.gpus = static_cast<int>(whole("gpus", v, 1, 1 << 24)); }},
      {"global_batch", "sequences per optimizer step", true,
       [](PointRequest& r, const std::string& v) { r.plan.global_batch = whole("global_batch", v, 1, kMaxSequences); }},
      {"seq_len", "tokens per sequence (default: the model's positions)", true,
       [](PointRequest& r, const std::string& v) { r.plan.seq_len = whole("seq_len", v, 1, 1 << 24); }},
      {"precision", "mixed_bf16 | mixed_fp16 | bf16 | fp8", false,
       [](PointRequest& r, const std::string& v) {
         if (v != "mixed_bf16" && v != "mixed_fp16" && v != "bf16" && v != "fp8")
           throw FieldError("precision", "'" + v + "' is not mixed_bf16, mixed_fp16, bf16 or fp8");
         r.plan.precision = v;
       }},
      {"framework", "framework profile (llm_foundry, megatron_lm, ...); default: neutral", false,
       [](PointRequest& r, const std::string& v) { r.plan.framework = v; }},
      {"offer", "price offer id (configs/pricing/: catalog/name): USD/h and USD per million tokens", false,
       [](PointRequest& r, const std::string& v) { r.offer = v; }},
      {"pricing", "pricing tier of the offer (default: its first; on_demand for cheapest)", false,
       [](PointRequest& r, const std::string& v) { r.pricing = v; }},
      {"offer_provider", "offer: cheapest: only this provider's offers (aws, gcp, ...)", false,
       [](PointRequest& r, const std::string& v) { r.offer_provider = v; }},
      {"offer_region", "offer: cheapest: only offers in this region", false,
       [](PointRequest& r, const std::string& v) { r.offer_region = v; }},
      {"tokens", "tokens to train (default: 20 per parameter)", false,
       [](PointRequest& r, const std::string& v) { r.tokens = real("tokens", v, 1, 1e18); }},
      {"goodput", "share of wall time that trains (failures, restarts, checkpoints); default 1", false,
       [](PointRequest& r, const std::string& v) { r.goodput = real("goodput", v, 0.01, 1); }},
      degree("fix_tp", "fix the tensor-parallel degree", &cost::PlanFixedNames::tp),
      degree("fix_pp", "fix the pipeline stages", &cost::PlanFixedNames::pp),
      degree("fix_pp_virtual_stages", "fix the interleaved chunks per stage", &cost::PlanFixedNames::virtual_stages),
      degree("fix_cp", "fix the context-parallel degree", &cost::PlanFixedNames::cp),
      degree("fix_ep", "fix the expert-parallel degree", &cost::PlanFixedNames::ep),
      {"fix_micro_batch", "fix the micro-batch (sequences)", true,
       [](PointRequest& r, const std::string& v) { r.plan_fixed.micro_batch = whole("fix_micro_batch", v, 1, kMaxSequences); }},
      {"fix_sharding", "fix ZeRO / FSDP: none | zero1 | zero2 | zero3", false,
       [](PointRequest& r, const std::string& v) {
         r.plan_fixed.sharding = v;
         cost::PlanFixedNames n;
         n.sharding = v;
         check_fixed_name("fix_sharding", n);
       }},
      {"fix_recompute", "fix recomputation: none | selective | full | selective_offloaded (TPU)", false,
       [](PointRequest& r, const std::string& v) {
         r.plan_fixed.recompute = v;
         cost::PlanFixedNames n;
         n.recompute = v;
         check_fixed_name("fix_recompute", n);
       }},
      {"fix_sequence_parallel", "fix sequence parallelism: true | false", false,
       [](PointRequest& r, const std::string& v) {
         r.plan_fixed.sequence_parallel = v;
         cost::PlanFixedNames n;
         n.sequence_parallel = v;
         check_fixed_name("fix_sequence_parallel", n);
       }},
      {"tp_across_nodes", "true | false: allow tensor parallelism beyond one node (default false)", false,
       [](PointRequest& r, const std::string& v) {
         if (v != "true" && v != "false") throw FieldError("tp_across_nodes", "'" + v + "' is not true or false");
         r.plan.tp_across_nodes = v == "true";
       }},
  };
  return fields;
}

// The best configuration's fields, named as in `xpusim plan --format json` where it has them.
const std::vector<ResultField>& plan_result_fields() {
  static const std::vector<ResultField> fields = {
      {"dp", false, "data-parallel degree of the best configuration", "data parallel (ranks)"},
      {"tp", false, "tensor-parallel degree of the best configuration", "tensor parallel (ranks)"},
      {"pp", false, "pipeline stages of the best configuration", "pipeline stages"},
      {"pp_virtual_stages", false, "interleaved chunks per stage of the best configuration", "virtual stages"},
      {"cp", false, "context-parallel degree of the best configuration", "context parallel (ranks)"},
      {"ep", false, "expert-parallel degree of the best configuration", "expert parallel (ranks)"},
      {"micro_batch", false, "sequences per micro-batch of the best configuration", "micro-batch (sequences)"},
      {"step_time_s", false, "s, one optimizer step of the best configuration", "step time (s)"},
      {"throughput_tokens_per_s", true, "tokens/s, whole job, best configuration", "throughput (tokens/s)"},
      {"mfu", true, "model FLOPs utilisation (fraction of the dense 16-bit peak)", "MFU (fraction)"},
      {"hfu", true, "hardware FLOPs utilisation, recomputation included (fraction)", "HFU (fraction)"},
      {"memory_bytes", false, "bytes per GPU of the best configuration", "memory per GPU (bytes)"},
      {"nodes", false, "nodes the job spans", "nodes"},
      {"configurations_fitting", true, "configurations that fit in memory", "fitting configurations"},
      {"price_usd_per_h", false, "USD/h of the job's GPUs at the offer's price", "price (USD/h)"},
      {"usd_per_million_tokens", false, "USD per million tokens trained", "cost per million tokens (USD)"},
      {"tokens_to_train", false, "tokens trained (the tokens field, else 20 per parameter)", "tokens to train"},
      {"days_to_train", false, "days of wall time to train tokens_to_train at goodput", "time to train (days)"},
      {"cost_to_train_usd", false, "USD to train tokens_to_train at goodput", "cost to train (USD)"},
  };
  return fields;
}

const std::vector<std::string>& plan_text_fields() {
  static const std::vector<std::string> f = {"sharding", "recompute", "sequence_parallel"};
  return f;
}

void finish_plan_request(PointRequest& r) { cost::apply_plan_fixed(r.plan_fixed, r.plan); }

std::string plan_request_problem(const PointRequest& r) {
  try {
    if (r.plan.model.empty()) return "model: no model (set it in fixed: or as an axis)";
    if (r.plan.cluster.empty()) return "cluster: no cluster (set it in fixed: or as an axis)";
    llm_model_of(r.plan);
    std::string device;
    if (!parallel::parse_tpu_cluster_name(r.plan.cluster)) {
      std::vector<std::string> cluster_overrides;
      for (const auto& o : r.plan.overrides)
        if (o.rfind("cluster.", 0) == 0) cluster_overrides.push_back(o.substr(8));
      const parallel::ClusterSpec c = parallel::find_cluster(r.plan.cluster, "cluster", cluster_overrides);
      device = r.plan.device.empty() ? c.default_device : r.plan.device;
      if (std::find(c.devices.begin(), c.devices.end(), device) == c.devices.end())
        return "device: cluster '" + c.name + "' does not hold device '" + device + "'";
      if (r.plan.gpus == 0) return "gpus: required on a GPU cluster (set it in fixed: or as an axis)";
      if (r.plan.gpus > c.max_devices())
        return "gpus: " + std::to_string(r.plan.gpus) + " GPUs requested, cluster '" + c.name + "' has " +
               std::to_string(c.max_devices());
      if (r.plan.global_batch < 1) return "global_batch: required (set it in fixed: or as an axis)";
      if (!r.offer.empty() || !r.offer_provider.empty() || !r.offer_region.empty())
        cost::plan_price(r.offer, r.pricing, device, {r.offer_provider, r.offer_region, r.plan.gpus, c.devices_per_node()});
    } else if (r.plan.global_batch < 1) {
      return "global_batch: required (set it in fixed: or as an axis)";
    }
  } catch (const FieldError& e) {
    return e.field() + ": " + e.message();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

void evaluate_plan(const PointRequest& r, PointResult& out) {
  const bool tpu = parallel::parse_tpu_cluster_name(r.plan.cluster).has_value();
  out.engine = tpu ? "tpu_llm_plan" : "llm_plan";
  const LlmPlanResult p = plan_llm(r.plan);  // keep = 0: every fitting one, for the count
  const cost::PlanPrice price =
      cost::plan_price(r.offer, r.pricing, p.device, {r.offer_provider, r.offer_region, p.gpus, p.devices_per_node});
  if (r.offer == cost::kCheapestOffer) put_offer_texts(price.offer, 1, price.date, price.source, out);
  out.values["nodes"] = p.nodes;
  out.values["configurations_fitting"] = 0;
  out.fits_in_memory = !p.search.ranked.empty();
  if (p.search.ranked.empty()) {
    out.status = "infeasible";
    std::string why;
    for (const auto& x : p.search.rejected)
      why += (why.empty() ? "" : "; ") + x.reason + ": " + std::to_string(x.count) + " (e.g. " + x.example + ")";
    out.note = "no configuration fits: " + (why.empty() ? std::string("none enumerated") : why);
    return;
  }
  const parallel::LlmCandidate& c = p.search.ranked.front();
  const parallel::LlmConfig& k = c.config;
  out.values["configurations_fitting"] = static_cast<double>(p.search.ranked.size());
  out.values["dp"] = k.dp, out.values["tp"] = k.tp, out.values["pp"] = k.pp;
  out.values["pp_virtual_stages"] = k.virtual_stages, out.values["cp"] = k.cp, out.values["ep"] = k.ep;
  out.values["micro_batch"] = static_cast<double>(k.micro_batch);
  out.texts["sharding"] = parallel::zero_stage_name(k.zero);
  out.texts["recompute"] = parallel::recompute_name(k.recompute);
  out.texts["sequence_parallel"] = k.sequence_parallel ? "true" : "false";
  out.values["step_time_s"] = c.time.step_s;
  out.values["throughput_tokens_per_s"] = c.tokens_per_s;
  out.values["mfu"] = c.mfu;
  out.values["hfu"] = c.hfu;
  out.values["memory_bytes"] = std::round(c.memory.total());
  const double tokens = cost::plan_train_tokens(p, r.tokens);
  const cost::PlanTrainCost t = cost::plan_train_cost(c, price, p.gpus, tokens, r.goodput);
  out.values["tokens_to_train"] = tokens;
  out.values["days_to_train"] = t.seconds / 86400.0;
  if (price.set) {
    const double usd_h = price.usd_per_gpu_h * p.gpus;
    out.values["price_usd_per_h"] = usd_h;
    out.values["usd_per_million_tokens"] = usd_h / 3600.0 / c.tokens_per_s * 1e6;
    out.values["cost_to_train_usd"] = t.usd;
  } else {
    out.note = "no offer: no price";
  }
}

}  // namespace xpusim::sweep
