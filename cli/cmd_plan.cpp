// `xpusim plan`: every valid parallel configuration of a decoder on N GPUs of a cluster,
// ranked by tokens/s, with memory, step time, MFU/HFU, dollars from an offer, the reasons the
// rejected ones fail, and the time and cost to train a number of tokens (docs/parallel.md).
#include <cmath>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "common/error.hpp"
#include "common/output.hpp"
#include "costmodel/pricing.hpp"
#include "common/checked_io.hpp"
#include "common/file_guard.hpp"
#include "predict/llm_plan.hpp"
#include "predict/llm_plan_chart.hpp"

namespace xpusim::cli {

namespace {

using parallel::LlmCandidate;

struct PlanFlags {
  LlmPlanRequest req;
  std::string format = "table", offer, tier, zero, recompute, sp, chart;
  int top = 10;
  int tp = 0, pp = 0, vs = 0, cp = 0, ep = 0;
  long long micro_batch = 0;
  double tokens = 0;      // 0 = 20 per parameter
  double goodput = 1.0;
};

struct Price {
  bool set = false;
  double usd_per_gpu_h = 0;
  std::string offer, tier;
};

Price price_of(const PlanFlags& f, const std::string& device) {
  Price p;
  if (f.offer.empty()) return p;
  const cost::PriceCatalog& cat = cost::default_price_catalog();
  const cost::PriceOffer& o = cat.get(f.offer);
  int gpus = 0;
  for (const auto& it : o.contains)
    if (it.what == device) gpus += it.count;
  if (gpus == 0) throw FieldError("offer", "offer '" + f.offer + "' contains no " + device);
  cost::PricingTier tier;
  if (f.tier.empty()) {
    const auto tiers = cat.tiers_of(f.offer);
    if (tiers.empty()) throw FieldError("offer", "offer '" + f.offer + "' has no price");
    if (!parse_tier(tiers.front(), tier)) throw FieldError("tier", "unknown tier '" + tiers.front() + "'");
  } else if (!parse_tier(f.tier, tier)) {
    throw FieldError("tier", "unknown tier '" + f.tier + "'");
  }
  p.set = true;
  p.usd_per_gpu_h = cat.usd_per_h(f.offer, tier) / gpus;
  p.offer = f.offer;
  p.tier = tier_name(tier);
  return p;
}

nlohmann::json candidate_json(const LlmCandidate& c, const Price& price, int gpus) {
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

// --chart: the plan at a quarter, half, the same, twice and four times the GPUs (the counts
// the cluster holds and the fixed degrees allow), every fitting configuration a point.
void write_chart(const PlanFlags& f, const LlmPlanResult& r, const Price& price, double tokens) {
  std::vector<PlanChartPoint> pts;
  for (const int mul : {-4, -2, 1, 2, 4}) {
    long long g = mul > 0 ? static_cast<long long>(f.req.gpus) * mul : f.req.gpus / -mul;
    if (g < 1 || (mul < 0 && f.req.gpus % -mul != 0) || g > (1 << 24)) continue;
    LlmPlanResult other;
    if (mul == 1) {
      other = r;
    } else {
      LlmPlanRequest q = f.req;
      q.gpus = static_cast<int>(g);
      try {
        other = plan_llm(q);
      } catch (const FieldError&) {
        continue;  // more GPUs than the cluster has, or a fixed degree that does not divide them
      }
    }
    const auto add = plan_chart_points(other, tokens, f.goodput, price.usd_per_gpu_h);
    pts.insert(pts.end(), add.begin(), add.end());
  }
  const std::string title = r.model + " on " + r.device + " (" + r.cluster + "), " + fmt_sig(tokens, 3) +
                            " tokens" + (price.set ? ", " + price.offer + " " + price.tier : "");
  write_file_atomic(f.chart, [&](std::ostream& out) { out << plan_pareto_svg(title, pts, price.set); }, "--chart");
}

void run_plan(const PlanFlags& f0) {
  PlanFlags f = f0;
  const OutputFormat fmt = parse_output_format(f.format, {OutputFormat::table, OutputFormat::json, OutputFormat::csv});
  auto& fx = f.req.fixed;
  if (f.tp) fx.tp = f.tp;
  if (f.pp) fx.pp = f.pp;
  if (f.vs) fx.virtual_stages = f.vs;
  if (f.cp) fx.cp = f.cp;
  if (f.ep) fx.ep = f.ep;
  if (f.micro_batch) fx.micro_batch = f.micro_batch;
  if (!f.zero.empty()) {
    parallel::ZeroStage z;
    if (!parallel::parse_zero_stage(f.zero, z)) throw FieldError("sharding", "unknown '" + f.zero + "' (none, zero1, zero2, zero3)");
    fx.zero = z;
  }
  if (!f.recompute.empty()) {
    parallel::Recompute r;
    // selective_offloaded: selective remat with the saved tensors on the host (TPU planner).
    f.req.offload_activations = f.recompute == "selective_offloaded";
    if (!parallel::parse_recompute(f.req.offload_activations ? "selective" : f.recompute, r)) throw FieldError("recompute", "unknown '" + f.recompute + "' (none, selective, full)");
    fx.recompute = r;
  }
  if (!f.sp.empty()) {
    if (f.sp != "true" && f.sp != "false") throw FieldError("sequence_parallel", "true or false, got '" + f.sp + "'");
    fx.sequence_parallel = f.sp == "true";
  }
  if (!f.chart.empty()) {
    if (f.chart.size() < 4 || f.chart.compare(f.chart.size() - 4, 4, ".svg") != 0)
      throw UserError("--chart: '" + f.chart + "' must end in .svg");
    refuse_output_over_input("--chart", f.chart, {f.req.model, f.req.cluster});
  }
  const LlmPlanResult r = plan_llm(f.req);
  const Price price = price_of(f, r.device);
  const double tokens = f.tokens > 0 ? f.tokens : 20.0 * static_cast<double>(r.parameters);
  if (!f.chart.empty()) write_chart(f, r, price, tokens);
  const auto& ranked = r.search.ranked;
  const size_t shown = std::min(ranked.size(), static_cast<size_t>(f.top));
  auto train = [&](const LlmCandidate& c) {
    const double seconds = tokens / (c.tokens_per_s * f.goodput);
    return std::pair<double, double>{seconds, price.set ? seconds / 3600.0 * price.usd_per_gpu_h * r.gpus : 0.0};
  };
  if (fmt == OutputFormat::json) {
    nlohmann::json j;
    j["model"] = r.model, j["parameters"] = r.parameters, j["cluster"] = r.cluster, j["device"] = r.device;
    j["framework"] = r.framework, j["precision"] = r.precision, j["gpus"] = r.gpus, j["nodes"] = r.nodes;
    j["seq_len"] = r.seq_len, j["global_batch"] = r.global_batch, j["usable_memory_per_gpu_bytes"] = r.memory_bytes;
    j["configurations_enumerated"] = r.search.enumerated, j["configurations_evaluated"] = r.search.evaluated;
    j["configurations_fitting"] = ranked.size();
    if (price.set) j["offer"] = {{"id", price.offer}, {"tier", price.tier}, {"usd_per_gpu_h", price.usd_per_gpu_h}};
    nlohmann::json top = nlohmann::json::array();
    for (size_t i = 0; i < shown; ++i) top.push_back(candidate_json(ranked[i], price, r.gpus));
    j["ranked"] = top;
    nlohmann::json rej = nlohmann::json::array();
    for (const auto& x : r.search.rejected) rej.push_back({{"reason", x.reason}, {"count", x.count}, {"example", x.example}});
    j["rejected"] = rej;
    if (!ranked.empty()) {
      const auto [s, usd] = train(ranked.front());
      j["train"] = {{"tokens", tokens}, {"goodput", f.goodput}, {"days", s / 86400.0}};
      if (price.set) j["train"]["usd"] = usd;
    }
    print_json(std::cout, j);
    return;
  }
  std::vector<std::string> cols{"rank", "dp", "tp", "pp", "v", "cp", "ep", "mb", "sharding", "recompute", "sp",
                                "mem_gb", "step_s", "tokens_per_s", "mfu", "hfu"};
  if (price.set) cols.insert(cols.end(), {"usd_per_h", "usd_per_mtok"});
  Table t(cols);
  for (size_t i = 0; i < shown; ++i) {
    const auto& c = ranked[i];
    const auto& k = c.config;
    std::vector<std::string> row{std::to_string(i + 1), std::to_string(k.dp), std::to_string(k.tp), std::to_string(k.pp),
                                 std::to_string(k.virtual_stages), std::to_string(k.cp), std::to_string(k.ep),
                                 std::to_string(k.micro_batch), parallel::zero_stage_name(k.zero),
                                 parallel::recompute_name(k.recompute), k.sequence_parallel ? "yes" : "no",
                                 fmt_fixed(c.memory.total() / 1e9, 1), fmt_sig(c.time.step_s, 4),
                                 fmt_sig(c.tokens_per_s, 4), fmt_fixed(c.mfu * 100, 1) + "%", fmt_fixed(c.hfu * 100, 1) + "%"};
    if (price.set) {
      const double usd_h = price.usd_per_gpu_h * r.gpus;
      row.push_back(fmt_fixed(usd_h, 2));
      row.push_back(fmt_fixed(usd_h / 3600.0 / c.tokens_per_s * 1e6, 3));
    }
    t.add(row);
  }
  if (fmt == OutputFormat::csv) {
    t.print(std::cout, fmt);
    return;
  }
  std::cout << r.model << " (" << fmt_int(r.parameters) << " parameters) on " << r.gpus << " x " << r.device << " ("
            << r.nodes << " nodes of " << r.cluster << "), sequence " << r.seq_len << ", global batch " << r.global_batch
            << ", " << r.precision << (r.framework == "default" ? "" : ", " + r.framework) << "\n";
  std::cout << r.search.evaluated << " configurations priced (" << r.search.enumerated << " enumerated), "
            << ranked.size() << " fit in " << fmt_fixed(r.memory_bytes / 1e9, 1) << " GB per GPU\n\n";
  if (shown > 0) t.print(std::cout, fmt);
  else std::cout << "no configuration fits\n";
  if (!r.search.rejected.empty()) {
    std::cout << "\nrejected (reason: count, e.g.):\n";
    for (const auto& x : r.search.rejected) std::cout << "  " << x.reason << ": " << x.count << ", e.g. " << x.example << "\n";
  }
  if (!ranked.empty()) {
    const auto [s, usd] = train(ranked.front());
    std::cout << "\ntraining " << fmt_sig(tokens, 4) << " tokens" << (f.tokens > 0 ? "" : " (20 per parameter)")
              << " with the best configuration at goodput " << fmt_fixed(f.goodput, 2) << ": " << fmt_fixed(s / 86400.0, 2)
              << " days";
    if (price.set) std::cout << ", $" << fmt_int(static_cast<long long>(std::llround(usd))) << " (" << price.offer << ", "
                             << price.tier << ")";
    std::cout << "\n";
  }
}

}  // namespace

void register_plan(CLI::App& app) {
  auto f = std::make_shared<PlanFlags>();
  auto* cmd = app.add_subcommand("plan", "rank the parallel configurations (dp, tp, pp, cp, micro-batch, ZeRO, recompute) "
                                         "of a decoder on N GPUs of a cluster; time and cost to train");
  cmd->add_option("--model", f->req.model, "decoder (zoo name or YAML with an llm shape)")->required();
  cmd->add_option("--cluster", f->req.cluster, "cluster (configs/clusters/), YAML path, or TPU slice (v5e-256, v5p-256, tpu_v5e_256_multislice)")->required();
  cmd->add_option("--device", f->req.device, "device of the cluster's nodes (default: the cluster's)");
  f->req.gpus = 0;  // required on a GPU cluster; a TPU slice defaults to its chips (plan_llm)
  cmd->add_option("--gpus", f->req.gpus, "GPUs of the job (TPU slice: chips, default the slice's)")->check(int_in(1, 1 << 24));
  cmd->add_option("--global-batch", f->req.global_batch, "sequences per optimizer step")->required()->check(int_in(1, kMaxBatch));
  cmd->add_option("--seq-len", f->req.seq_len, "tokens per sequence (default: the model's positions)")->check(int_in(1, 1 << 24));
  cmd->add_option("--precision", f->req.precision, "mixed_bf16 | mixed_fp16 | bf16 | fp8")->capture_default_str();
  cmd->add_option("--framework", f->req.framework, "framework profile (llm_foundry, megatron_lm, ...); default: neutral");
  cmd->add_option("--set", f->req.overrides, "KEY=VALUE on the device YAML, framework.KEY=VALUE, cluster.KEY=VALUE");
  cmd->add_option("--top", f->top, "configurations shown")->capture_default_str()->check(int_in(1, 1000000));
  add_format_option(*cmd, f->format, "table|json|csv", "table");
  cmd->add_option("--offer", f->offer, "price offer (configs/pricing/, e.g. aws_2025/p5.48xlarge): $/h and $ per million tokens");
  cmd->add_option("--tier", f->tier, "pricing tier of the offer (default: its first)");
  cmd->add_option("--tokens", f->tokens, "tokens to train (default: 20 per parameter)")->check(finite_in(1, 1e18));
  cmd->add_option("--goodput", f->goodput,
                  "share of wall time that trains (failures, restarts, checkpoints); an input, default 1 = none lost")
      ->capture_default_str()
      ->check(finite_in(0.01, 1));
  cmd->add_option("--tp", f->tp, "fix the tensor-parallel degree")->check(int_in(1, 65536));
  cmd->add_option("--pp", f->pp, "fix the pipeline stages")->check(int_in(1, 65536));
  cmd->add_option("--virtual-stages", f->vs, "fix the interleaved chunks per stage")->check(int_in(1, 1024));
  cmd->add_option("--cp", f->cp, "fix the context-parallel degree")->check(int_in(1, 65536));
  cmd->add_option("--ep", f->ep, "fix the expert-parallel degree")->check(int_in(1, 65536));
  cmd->add_option("--micro-batch", f->micro_batch, "fix the micro-batch (sequences)")->check(int_in(1, kMaxBatch));
  cmd->add_option("--sharding", f->zero, "fix ZeRO / FSDP: none | zero1 | zero2 | zero3");
  cmd->add_option("--recompute", f->recompute, "fix recomputation: none | selective | full | selective_offloaded (TPU)");
  cmd->add_option("--sequence-parallel", f->sp, "fix sequence parallelism: true | false");
  cmd->add_option("--chart", f->chart,
                  "also write an SVG Pareto chart of time vs cost to train over every fitting configuration at "
                  "1/4, 1/2, 1, 2 and 4 times the GPUs");
  cmd->add_flag("--tp-across-nodes", f->req.tp_across_nodes, "allow tensor parallelism beyond one node");
  cmd->callback([f] {
    alias_field_flag("pp_virtual_stages", "--virtual-stages");
    run_plan(*f);
  });
}

}  // namespace xpusim::cli
