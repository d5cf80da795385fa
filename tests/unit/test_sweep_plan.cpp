// Sweeps whose points run the large-model planner (`evaluate: plan`, issue 30 item 5): the YAML
// checks (file:line: key: message, plan fields only), a point's row equal to what `xpusim plan`
// ranks first with its price derived by hand, a point where nothing fits, constraints, and the
// row read back exactly in both formats.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "costmodel/plan_document.hpp"
#include "predict/llm_plan.hpp"
#include "sweep/points.hpp"
#include "sweep/results.hpp"
#include "sweep/sweep_spec.hpp"

using namespace xpusim;
using namespace xpusim::sweep;
using Catch::Contains;
using Catch::StartsWith;

namespace {

std::string plan_yaml(const std::string& name, const std::string& text) {
  auto dir = std::filesystem::temp_directory_path() / "xpusim_test_sweep_plan";
  std::filesystem::create_directories(dir);
  std::string path = (dir / (name + ".yaml")).string();
  std::ofstream(path) << text;
  return path;
}

std::string plan_load_error(const std::string& name, const std::string& text) {
  const std::string path = plan_yaml(name, text);
  try {
    load_sweep(path);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

const char* kPlan =
    "evaluate: plan\n"
    "fixed: {model: llama3_8b, global_batch: 64, seq_len: 2048}\n"
    "axes:\n"
    "  hardware:\n"
    "    - {cluster: hgx_h100_ib3200, offer: aws_2025/p5.48xlarge}\n"
    "  gpus: [16, 32]\n";

}  // namespace

TEST_CASE("plan sweep: loads with the plan's fields; default objective tokens/s", "[sweep][plan]") {
  const SweepSpec s = load_sweep(plan_yaml("ok", kPlan));
  CHECK(s.kind == PointKind::plan);
  CHECK(s.grid_size() == 2);
  CHECK(s.columns == std::vector<std::string>{"model", "global_batch", "seq_len", "cluster", "offer", "gpus"});
  REQUIRE(s.objectives.size() == 1);
  CHECK(s.objectives[0].field == "throughput_tokens_per_s");
  CHECK(s.objectives[0].maximize);
  const auto cols = row_columns(s);
  CHECK(std::find(cols.begin(), cols.end(), "usd_per_million_tokens") != cols.end());
  CHECK(std::find(cols.begin(), cols.end(), "sharding") != cols.end());
  CHECK(std::find(cols.begin(), cols.end(), "bottleneck") == cols.end());  // predict rows only
}

TEST_CASE("plan sweep: bad input is file:line: key: message before any point runs", "[sweep][plan]") {
  // A predict field is not a plan field.
  std::string e = plan_load_error("batch", "evaluate: plan\nfixed: {model: llama3_8b, cluster: hgx_h100_ib3200}\n"
                                           "axes:\n  batch: [1, 2]\n");
  CHECK_THAT(e, Contains("batch.yaml:4:") && Contains("axes.batch: unknown axis key 'batch'") && Contains("global_batch"));
  e = plan_load_error("fixed_key", "evaluate: plan\nfixed: {model: llama3_8b, tp: 8}\naxes:\n  gpus: [8]\n");
  CHECK_THAT(e, Contains("fixed_key.yaml:2:") && Contains("fixed.tp: unknown field 'tp'") && Contains("fix_tp"));
  e = plan_load_error("mode", "evaluate: planner\naxes:\n  gpus: [8]\n");
  CHECK_THAT(e, Contains("mode.yaml:1:") && Contains("evaluate"));
  // Not a decoder: blamed on the field that names it.
  e = plan_load_error("resnet", "evaluate: plan\nfixed: {cluster: hgx_h100_ib3200, gpus: 8, global_batch: 8}\n"
                                "axes:\n  model: [llama3_8b, resnet50]\n");
  CHECK_THAT(e, Contains("resnet.yaml:4:") && Contains("axes.model: model=resnet50: model:") && Contains("llm shape"));
  // More GPUs than the cluster holds; an offer without the cluster's device.
  e = plan_load_error("gpus", "evaluate: plan\nfixed: {model: llama3_8b, cluster: hgx_h100_ib3200, global_batch: 8}\n"
                              "axes:\n  gpus: [8, 100000]\n");
  CHECK_THAT(e, Contains("gpus.yaml:4:") && Contains("axes.gpus: gpus=100000: gpus:") && Contains("16384"));
  e = plan_load_error("offer", "evaluate: plan\nfixed: {model: llama3_8b, cluster: hgx_h100_ib3200, global_batch: 8}\n"
                               "axes:\n  hw:\n    - {gpus: 8, offer: aws_2025/p4d.24xlarge}\n");
  CHECK_THAT(e, Contains("offer.yaml:5:") && Contains("offer:") && Contains("h100"));
  e = plan_load_error("zero", "evaluate: plan\nfixed: {model: llama3_8b, cluster: hgx_h100_ib3200, gpus: 8, global_batch: 8}\n"
                              "axes:\n  fix_sharding: [zero3, zero4]\n");
  CHECK_THAT(e, Contains("zero.yaml:4:") && Contains("fix_sharding:") && Contains("zero4"));
  e = plan_load_error("nogpus", "evaluate: plan\nfixed: {model: llama3_8b, cluster: hgx_h100_ib3200, global_batch: 8}\n"
                                "axes:\n  seq_len: [2048]\n");
  CHECK_THAT(e, Contains("nogpus.yaml") && Contains("gpus: required"));
  // Result fields are the plan's; a target is refused (tokens say how much to train).
  e = plan_load_error("objective", std::string(kPlan) + "objectives: [throughput_samples_per_s]\n");
  CHECK_THAT(e, Contains("objectives.throughput_samples_per_s: unknown result field") && Contains("throughput_tokens_per_s"));
  e = plan_load_error("target", std::string(kPlan) + "target: {dataset: imagenet, epochs: 1}\n");
  CHECK_THAT(e, Contains("target.yaml") && Contains("target: plan points train a number of tokens"));
}

TEST_CASE("plan sweep: a point is plan's best configuration, priced by hand", "[sweep][plan]") {
  const SweepSpec s = load_sweep(plan_yaml("ok", kPlan));
  const std::vector<Point> pts = make_points(s);
  REQUIRE(pts.size() == 2);
  Evaluator ev;
  const PointResult r = ev.evaluate(s, pts[0]);
  INFO(r.error << r.note);
  REQUIRE(r.status == "ok");
  CHECK(r.engine == "llm_plan");
  // The same request through plan_llm directly.
  LlmPlanRequest q;
  q.model = "llama3_8b", q.cluster = "hgx_h100_ib3200", q.gpus = 16, q.global_batch = 64, q.seq_len = 2048;
  const LlmPlanResult p = plan_llm(q);
  REQUIRE(!p.search.ranked.empty());
  const auto& best = p.search.ranked.front();
  CHECK(r.values.at("tp") == best.config.tp);
  CHECK(r.values.at("pp") == best.config.pp);
  CHECK(r.values.at("dp") == best.config.dp);
  CHECK(r.values.at("micro_batch") == best.config.micro_batch);
  CHECK(r.texts.at("sharding") == parallel::zero_stage_name(best.config.zero));
  CHECK(r.values.at("throughput_tokens_per_s") == best.tokens_per_s);
  CHECK(r.values.at("configurations_fitting") == double(p.search.ranked.size()));
  CHECK(r.values.at("nodes") == 2);
  // aws_2025/p5.48xlarge: 39.33 USD/h for 8 H100 (capacity block, the offer's first tier).
  const double usd_h = 39.33 / 8 * 16;
  CHECK(r.values.at("price_usd_per_h") == Approx(usd_h));
  CHECK(r.values.at("usd_per_million_tokens") == Approx(usd_h / 3600 / best.tokens_per_s * 1e6));
  // 20 tokens per parameter at goodput 1.
  const double tokens = 20.0 * double(p.parameters);
  CHECK(r.values.at("tokens_to_train") == Approx(tokens));
  CHECK(r.values.at("days_to_train") == Approx(tokens / best.tokens_per_s / 86400));
  CHECK(r.values.at("cost_to_train_usd") == Approx(tokens / best.tokens_per_s / 3600 * usd_h));
  // Rows read back exactly; JSONL types the text fields.
  for (RowFormat f : {RowFormat::csv, RowFormat::jsonl}) {
    const std::string line = format_row(s, r, f);
    CHECK(format_row(s, parse_row(s, line, f, "t"), f) == line);
  }
  const auto j = nlohmann::json::parse(format_row(s, r, RowFormat::jsonl));
  CHECK(j.at("sequence_parallel").is_boolean());
  CHECK(j.at("gpus") == 16);
  CHECK(!j.contains("bottleneck"));
  // Deterministic: the same point again is the same line.
  CHECK(format_row(s, ev.evaluate(s, pts[0]), RowFormat::csv) == format_row(s, r, RowFormat::csv));
}

TEST_CASE("plan sweep: nothing fits is infeasible with the reasons; constraints apply", "[sweep][plan]") {
  // 70B without sharding or tensor parallelism on 8 x 80 GB: weights, gradients and Adam
  // state alone are ~16 bytes x 70e9 / pp, over 80 GB at any pp of 8 GPUs.
  const SweepSpec s = load_sweep(plan_yaml(
      "oom", "evaluate: plan\nfixed: {model: llama3_70b, cluster: hgx_h100_ib3200, global_batch: 8, seq_len: 2048,"
             " fix_sharding: none, fix_tp: 1}\naxes:\n  gpus: [8]\n"));
  Evaluator ev;
  const PointResult r = ev.evaluate(s, make_points(s)[0]);
  CHECK(r.status == "infeasible");
  REQUIRE(r.fits_in_memory.has_value());
  CHECK_FALSE(*r.fits_in_memory);
  CHECK_THAT(r.note, StartsWith("no configuration fits: ") && Contains("memory"));
  CHECK(r.values.at("configurations_fitting") == 0);

  const SweepSpec c = load_sweep(plan_yaml("cheap", std::string(kPlan) + "constraints:\n  max: {usd_per_million_tokens: 0.001}\n"));
  const PointResult x = ev.evaluate(c, make_points(c)[0]);
  CHECK(x.status == "infeasible");
  CHECK_THAT(x.note, StartsWith("usd_per_million_tokens "));
  const Summary sum = summarize(c, {x});
  CHECK(sum.infeasible == 1);
}
