// Profile inheritance (engine/framework_base.hpp): a profile naming a `base` takes every field
// it does not set from it, never the base's identity (name, names, versions, description,
// source, calibrate); bad bases are one error at the `base:` line; the shipped channels-last
// PyTorch 2.x profile differs from pytorch_2 only where its layout does.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/config_paths.hpp"
#include "engine/framework_spec.hpp"
#include "predict/llm_plan.hpp"
#include "predict/predict.hpp"
#include "tests/unit/predict_request.hpp"
#include "validation/calibrate.hpp"
#include "validation/reference_csv.hpp"
#include "validation/validate.hpp"
#include "xpusim_test_paths.hpp"

using namespace xpusim;
using namespace xpusim::validation;
namespace fs = std::filesystem;

namespace {
// A scratch profile directory, removed at the end.
struct ProfileDir {
  ProfileDir() : dir(fs::temp_directory_path() / ("xpusim_framework_base_" + std::to_string(::getpid()))) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~ProfileDir() { fs::remove_all(dir); }
  std::string write(const std::string& stem, const std::string& text) const {
    const fs::path p = dir / (stem + ".yaml");
    std::ofstream(p) << text;
    return p.string();
  }
  fs::path dir;
};

const char* kBase =
    "name: parent\n"
    "description: the parent stack\n"
    "names: [parent-1.x]\n"
    "engines: [analytical]\n"
    "op_overhead_scale: 0.5\n"
    "input_workers_per_device: 4\n"
    "conv_layout: nchw\n"
    "calibrate: [op_overhead_scale]\n"
    "source: fitted on something\n";
}  // namespace

TEST_CASE("a profile with a base takes the base's fields, not its identity, and its own fields win", "[frameworks]") {
  const ProfileDir d;
  d.write("parent", kBase);
  const std::string child =
      d.write("child", "name: child\nbase: parent\nnames: [child-1.x]\nconv_layout: native\ninput_workers_per_device: 8\n");
  const FrameworkSpec f = load_framework_spec(child);
  CHECK(f.base == "parent");
  CHECK(f.op_overhead_scale == 0.5);             // inherited
  CHECK(f.engines == std::vector<std::string>{"analytical"});
  CHECK(f.input_workers_per_device == 8);        // its own value wins
  CHECK_FALSE(f.nchw_activations);               // conv_layout: native over the base's nchw
  CHECK(f.names == std::vector<std::string>{"child-1.x"});  // identity is never inherited
  CHECK(f.description.empty());
  CHECK(f.source.empty());
  // A --set override on the child reaches an inherited field too.
  CHECK(load_framework_spec(child, {"op_overhead_scale=2"}).op_overhead_scale == 2);
  // The base itself is untouched.
  CHECK(load_framework_spec((d.dir / "parent.yaml").string()).nchw_activations);
  // The field is documented like every other.
  const auto docs = framework_spec_fields(child);
  CHECK(std::any_of(docs.begin(), docs.end(), [](const FieldDoc& x) { return x.key == "base"; }));
}

TEST_CASE("a bad base is one error at the profile's base line, and an error in the base names the base", "[frameworks]") {
  const ProfileDir d;
  d.write("parent", kBase);
  const std::string child = d.write("child", "name: child\nengines: [analytical]\nbase: nope\n");
  CHECK_THROWS_WITH(load_framework_spec(child), Catch::StartsWith(child + ":3: base: no profile 'nope' beside this one or in"));
  d.write("child", "name: child\nbase: ../parent\n");
  CHECK_THROWS_WITH(load_framework_spec(child), Catch::StartsWith(child + ":2: base: expected the file stem"));
  d.write("child", "name: child\nbase: child\n");
  CHECK_THROWS_WITH(load_framework_spec(child), child + ":2: base: a profile cannot be its own base");
  // One level only: a base with a base of its own is refused, naming the one to start from.
  d.write("middle", "name: middle\nbase: parent\n");
  d.write("child", "name: child\nbase: middle\n");
  CHECK_THROWS_WITH(load_framework_spec(child),
                    child + ":2: base: 'middle' has a base of its own; name the profile it starts from (parent)");
  // The base is checked on its own first: its error names its file and line, not the child's.
  const std::string parent = d.write("parent", std::string(kBase) + "op_overhead_scale_typo: 1\n");
  d.write("child", "name: child\nbase: parent\n");
  CHECK_THROWS_WITH(load_framework_spec(child), Catch::StartsWith(parent + ":10: op_overhead_scale_typo"));
  // The child's own unknown keys are still refused at its own lines.
  d.write("parent", kBase);
  d.write("child", "name: child\nbase: parent\nconv_layuot: native\n");
  CHECK_THROWS_WITH(load_framework_spec(child), Catch::StartsWith(child + ":3: conv_layuot"));
}

TEST_CASE("a check across fields that fails on a value taken from the base names the base's line", "[frameworks]") {
  const ProfileDir d;
  const std::string parent = d.write("parent", kBase);
  // The child is for the TPU model; the base's conv_layout (line 7) is an analytical field.
  const std::string child = d.write("child", "name: child\nbase: parent\nengines: [tpu_systemc]\n");
  CHECK_THROWS_WITH(load_framework_spec(child),
                    Catch::StartsWith(parent + ":7: conv_layout: applies to the analytical engine only") &&
                        Catch::EndsWith("(the value " + child + " takes from its base)"));
  // The child's own input_threads against the base's input_workers_per_device (line 6).
  d.write("child", "name: child\nbase: parent\ninput_threads: 3\n");
  CHECK_THROWS_WITH(load_framework_spec(child),
                    parent + ":6: input_workers_per_device: give input_threads or input_workers_per_device, not both "
                             "(the value " + child + " takes from its base)");
  // A value the child sets itself is still named at the child's own line.
  d.write("child", "name: child\nbase: parent\ninput_threads: 3\ninput_workers_per_device: 2\n");
  CHECK_THROWS_WITH(load_framework_spec(child), Catch::StartsWith(child + ":4: input_workers_per_device: give"));
}

TEST_CASE("a user's profile outside the config directory starts from a shipped one", "[frameworks]") {
  const ProfileDir d;  // no pytorch_2.yaml here: the shipped profile is the base
  const std::string mine = d.write(
      "our_trainer", "name: our_trainer\nbase: pytorch_2\nnames: [our-pytorch]\nconv_layout: native\ninput_workers_per_device: 8\n");
  const FrameworkSpec f = load_framework_spec(mine);
  const auto shipped = find_framework_profile("pytorch-2.x", "analytical");
  REQUIRE(shipped);
  CHECK(f.kernel_tensor_efficiency_scale == shipped->kernel_tensor_efficiency_scale);
  CHECK(f.input_cost_scale == shipped->input_cost_scale);
  CHECK(f.input_workers_per_device == 8);
  CHECK_FALSE(f.nchw_activations);
  // A profile beside it of the same stem wins over the shipped one.
  d.write("pytorch_2", "name: pytorch_2\nengines: [analytical]\ninput_cost_scale: 3\n");
  CHECK(load_framework_spec(mine).input_cost_scale == 3);
}

TEST_CASE("calibration fits a constant a profile takes from its base, in the profile", "[frameworks][calibrate]") {
  const ProfileDir d;
  fs::create_directories(d.dir / "frameworks");
  std::ofstream(d.dir / "frameworks" / "parent.yaml") << kBase;
  std::ofstream(d.dir / "frameworks" / "child.yaml")
      << "name: child\nbase: parent\nnames: [child-1.x]\ncalibrate: [op_overhead_scale]\n";
  const std::string previous = config_dir();
  set_config_dir(d.dir.string());
  const auto params = fittable_framework_constants("child");
  REQUIRE(params.size() == 1);
  CHECK(params[0].key == "op_overhead_scale");
  CHECK(params[0].initial == 0.5);  // the base's value, where the fit starts
  // The base's own calibrate list is not the child's: without one there is nothing to fit.
  std::ofstream(d.dir / "frameworks" / "child.yaml") << "name: child\nbase: parent\n";
  CHECK_THROWS_WITH(fittable_framework_constants("child"), Catch::Contains("calibrate: missing"));
  set_config_dir(previous);
}

TEST_CASE("PyTorch 2.x in channels-last: no transposes around tensor-core convolutions, the rest is pytorch_2's",
          "[frameworks]") {
  const auto cl = find_framework_profile("pytorch-2.x-channels-last", "analytical");
  const auto nchw = find_framework_profile("pytorch-2.x", "analytical");
  REQUIRE(cl);
  REQUIRE(nchw);
  CHECK(cl->base == "pytorch_2");
  CHECK_FALSE(cl->nchw_activations);
  CHECK_FALSE(cl->nchw_activations_fp32);
  CHECK(nchw->nchw_activations);
  CHECK(cl->kernel_tensor_efficiency_scale == nchw->kernel_tensor_efficiency_scale);
  CHECK(cl->op_overhead_scale == nchw->op_overhead_scale);
  CHECK(cl->input_workers_per_device == nchw->input_workers_per_device);
  auto step = [](const std::string& fw, const std::string& model, const std::string& precision) {
    PredictRequest r = fixtures::predict_request("h100_sxm5", 1, model, 128, precision, "");
    r.placement.framework = fw;
    return predict(r).step_time_s;
  };
  // ResNet-50's tensor-core convolutions lose their transposes in TF32 and AMP alike.
  for (const char* p : {"tf32", "mixed_fp16"}) {
    INFO(p);
    CHECK(step("pytorch-2.x-channels-last", "resnet50", p) < 0.85 * step("pytorch-2.x", "resnet50", p));
  }
  // A model without convolutions runs the same under both.
  CHECK(step("pytorch-2.x-channels-last", "bert_base", "mixed_fp16") == step("pytorch-2.x", "bert_base", "mixed_fp16"));
}

TEST_CASE("PyTorch 2.11 channels-last ResNet-50 on an H100 and an H200 (held out) under the profile of what ran",
          "[frameworks][validation]") {
  // validation/measured/: torchvision ResNet-50 in channels-last memory, TF32 and AMP, labelled
  // `pytorch-2.x-channels-last`. Never fitted on: the levels are what the model gave when the
  // rows were relabelled (2026-11-28). Under DeepLearningExamples' stack (`pytorch`, NCHW in
  // TF32) the TF32 rows were 28-37 % slow: the transposes the channels-last run never paid.
  struct Case {
    const char* file;
    int rows;
    double tf32_abs_error_pct;  // when relabelled: 8.3, 0.5, 13.8
  };
  for (const Case& c : {Case{"h100-2026-11-27.csv", 4, 10.0}, Case{"h200-pytorch-2026-11-26.csv", 2, 3.0},
                        Case{"h200-2026-11-26b.csv", 4, 16.0}}) {
    INFO(c.file);
    std::vector<validation::ReferenceRow> rows;
    for (const auto& r : validation::read_reference_csv(std::string(XPUSIM_MEASURED_DIR) + "/" + c.file))
      if (r.framework == "pytorch-2.x-channels-last") rows.push_back(r);
    REQUIRE(static_cast<int>(rows.size()) == c.rows);
    const auto now = validation::validate_rows(rows, {});
    REQUIRE(now.rows_used == c.rows);
    CHECK(*now.mape_pct <= 26.0);  // every row within VGG16 AMP's -25 %
    // The same rows under the stack they were labelled with before.
    for (auto& r : rows) r.framework = "pytorch";
    const auto before = validation::validate_rows(rows, {});
    for (size_t i = 0; i < rows.size(); ++i) {
      INFO(rows[i].model << " " << rows[i].precision);
      if (rows[i].precision == "tf32") {
        CHECK(std::abs(*now.rows[i].error_pct) <= c.tf32_abs_error_pct);
        CHECK(*before.rows[i].error_pct < -25.0);
      } else {
        CHECK(*now.rows[i].error_pct == Approx(*before.rows[i].error_pct));  // AMP was channels-last already
      }
    }
  }
}

TEST_CASE("Megatron-Core and Megatron-DeepSpeed: megatron_lm's constants; Core with fused attention and no dropout", "[frameworks][llm]") {
  const auto core = find_framework_profile("megatron-core", "analytical");
  const auto lm = find_framework_profile("megatron-lm", "analytical");
  REQUIRE(core);
  REQUIRE(lm);
  CHECK(core->base == "megatron_lm");
  CHECK(core->flash_attention);
  CHECK_FALSE(core->dropout);
  CHECK_FALSE(lm->flash_attention);
  CHECK(lm->dropout);
  CHECK(core->kernel_tensor_efficiency_scale == lm->kernel_tensor_efficiency_scale);
  CHECK(core->kernel_memory_efficiency_scale == lm->kernel_memory_efficiency_scale);
  CHECK(core->op_overhead_scale == lm->op_overhead_scale);
  // Megatron-DeepSpeed runs Megatron-LM's kernels: the same stack under its own name.
  const auto mds = find_framework_profile("megatron-deepspeed", "analytical");
  REQUIRE(mds);
  CHECK(mds->base == "megatron_lm");
  CHECK(mds->flash_attention == lm->flash_attention);
  CHECK(mds->dropout == lm->dropout);
  CHECK(mds->kernel_tensor_efficiency_scale == lm->kernel_tensor_efficiency_scale);
  CHECK(mds->gemm_dims_padded_to == lm->gemm_dims_padded_to);
  // One fixed configuration of Llama 3 8B at 8,192 tokens on 8 H100s: the stored s x s scores
  // and dropout masks are gone from the activations, and the step is shorter; the model state
  // is the same.
  auto plan = [](const std::string& fw) {
    LlmPlanRequest q;
    q.model = "llama3_8b", q.cluster = "hgx_h100_ib3200", q.gpus = 8, q.global_batch = 8, q.seq_len = 8192;
    q.framework = fw;
    q.fixed.tp = 8, q.fixed.pp = 1, q.fixed.cp = 1, q.fixed.micro_batch = 1;
    q.fixed.zero = parallel::ZeroStage::optimizer, q.fixed.recompute = parallel::Recompute::none;
    q.fixed.sequence_parallel = true;
    const LlmPlanResult p = plan_llm(q);
    REQUIRE(p.search.ranked.size() == 1);
    return p.search.ranked.front();
  };
  const auto c = plan("megatron-core"), l = plan("megatron-lm");
  CHECK(c.memory.weights == l.memory.weights);
  CHECK(c.memory.optimizer == l.memory.optimizer);
  CHECK(c.memory.activations < 0.5 * l.memory.activations);
  CHECK(c.time.step_s < l.time.step_s);
}
