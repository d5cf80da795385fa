// `xpusim plan`: every valid parallel configuration of a decoder on N GPUs of a cluster,
// ranked by tokens/s, with memory, step time, MFU/HFU, dollars from an offer, the reasons the
// rejected ones fail, and the time and cost to train a number of tokens (docs/parallel.md).
#include <cmath>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "common/checked_io.hpp"
#include "common/error.hpp"
#include "common/file_guard.hpp"
#include "common/output.hpp"
#include "costmodel/plan_document.hpp"
#include "parallel/tpu_cluster.hpp"
#include "predict/llm_plan.hpp"
#include "predict/llm_plan_chart.hpp"

namespace xpusim::cli {

namespace {

using parallel::LlmCandidate;

struct PlanFlags {
  LlmPlanRequest req;
  cost::PlanFixedNames fixed;
  std::string format = "table", offer, tier, chart;
  std::string offer_provider, offer_region;  // --offer cheapest filters
  int top = 10;
  double tokens = 0;      // 0 = 20 per parameter
  double goodput = 1.0;
};

// --chart: the plan at a quarter, half, the same, twice and four times the GPUs (the counts
// the cluster holds and the fixed degrees allow), every fitting configuration a point.
void write_chart(const PlanFlags& f, const LlmPlanResult& r, const cost::PlanPrice& price, double tokens) {
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
  cost::apply_plan_fixed(f.fixed, f.req);
  if (!f.chart.empty()) {
    if (f.chart.size() < 4 || f.chart.compare(f.chart.size() - 4, 4, ".svg") != 0)
      throw UserError("--chart: '" + f.chart + "' must end in .svg");
    refuse_output_over_input("--chart", f.chart, {f.req.model, f.req.cluster});
  }
  const LlmPlanResult r = plan_llm(f.req);
  const cost::PlanPrice price =
      cost::plan_price(f.offer, f.tier, r.device, {f.offer_provider, f.offer_region, r.gpus, r.devices_per_node});
  const double tokens = cost::plan_train_tokens(r, f.tokens);
  if (!f.chart.empty()) write_chart(f, r, price, tokens);
  const auto& ranked = r.search.ranked;
  const size_t shown = std::min(ranked.size(), static_cast<size_t>(f.top));
  auto train = [&](const LlmCandidate& c) {
    const cost::PlanTrainCost t = cost::plan_train_cost(c, price, r.gpus, tokens, f.goodput);
    return std::pair<double, double>{t.seconds, t.usd};
  };
  if (fmt == OutputFormat::json) {
    print_json(std::cout, cost::plan_document(r, price, f.top, f.tokens, f.goodput));
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
  // A TPU slice's devices are chips: the text says so (the JSON keeps its field names).
  const char* unit = parallel::parse_tpu_cluster_name(f.req.cluster) ? "chip" : "GPU";
  std::cout << r.model << " (" << fmt_int(r.parameters) << " parameters) on " << r.gpus << " x " << r.device << " ("
            << r.nodes << " nodes of " << r.cluster << "), sequence " << r.seq_len << ", global batch " << r.global_batch
            << ", " << r.precision << (r.framework == "default" ? "" : ", " + r.framework) << "\n";
  // The neutral stack prices GEMMs at the CNN calibration stack's efficiency, well under what an
  // LLM training stack's large GEMMs reach: say so, and how to name one.
  if (r.framework == "default" && !parallel::parse_tpu_cluster_name(f.req.cluster))
    std::cout << "framework: neutral (the calibration stack's kernel efficiencies); name the training stack with "
                 "--framework (megatron-lm, llm-foundry; xpusim list frameworks)\n";
  std::cout << r.search.evaluated << " configurations priced (" << r.search.enumerated << " enumerated), "
            << ranked.size() << " fit in " << fmt_fixed(r.memory_bytes / 1e9, 1) << " GB per " << unit << "\n\n";
  if (!price.choice.empty()) std::cout << "offer: " << price.choice << "\n\n";
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
  cmd->add_option("--offer", f->offer,
                  "price offer (configs/pricing/, e.g. aws_2025/p5.48xlarge), or cheapest: the lowest $/h of the "
                  "offers that hold the job in whole nodes; $/h and $ per million tokens");
  cmd->add_option("--tier", f->tier, "pricing tier of the offer (default: its first; with --offer cheapest, on_demand)");
  cmd->add_option("--offer-provider", f->offer_provider, "--offer cheapest: only this provider's offers (aws, gcp, ...)");
  cmd->add_option("--offer-region", f->offer_region, "--offer cheapest: only offers in this region (us-east-1, ...)");
  cmd->add_option("--tokens", f->tokens, "tokens to train (default: 20 per parameter)")->check(finite_in(1, 1e18));
  cmd->add_option("--goodput", f->goodput,
                  "share of wall time that trains (failures, restarts, checkpoints); an input, default 1 = none lost")
      ->capture_default_str()
      ->check(finite_in(0.01, 1));
  cmd->add_option("--tp", f->fixed.tp, "fix the tensor-parallel degree")->check(int_in(1, 65536));
  cmd->add_option("--pp", f->fixed.pp, "fix the pipeline stages")->check(int_in(1, 65536));
  cmd->add_option("--virtual-stages", f->fixed.virtual_stages, "fix the interleaved chunks per stage")->check(int_in(1, 1024));
  cmd->add_option("--cp", f->fixed.cp, "fix the context-parallel degree")->check(int_in(1, 65536));
  cmd->add_option("--ep", f->fixed.ep, "fix the expert-parallel degree")->check(int_in(1, 65536));
  cmd->add_option("--micro-batch", f->fixed.micro_batch, "fix the micro-batch (sequences)")->check(int_in(1, kMaxBatch));
  cmd->add_option("--sharding", f->fixed.sharding, "fix ZeRO / FSDP: none | zero1 | zero2 | zero3");
  cmd->add_option("--recompute", f->fixed.recompute, "fix recomputation: none | selective | full | selective_offloaded (TPU)");
  cmd->add_option("--sequence-parallel", f->fixed.sequence_parallel, "fix sequence parallelism: true | false");
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
