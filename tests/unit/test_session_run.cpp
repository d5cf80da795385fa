// A runtime without a graph session (the framework profile's session_run: false) does not pay
// the device file's per-step session-run cost, and the GPU model against xpusim's own CUDA
// backend measured on an H200 (validation/measured/h200-2026-11-26.csv; held out: nothing is
// fitted on it). The levels are that file's figures, pinned so a change that moves them shows.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "predict/predict.hpp"
#include "tests/unit/predict_request.hpp"
#include "validation/reference_csv.hpp"
#include "validation/validate.hpp"
#include "xpusim_test_paths.hpp"

using namespace xpusim;

namespace {
StepReport resnet50_on_h200(const std::vector<std::string>& overrides) {
  PredictRequest r = fixtures::predict_request("h200", 1, "resnet50", 64, "fp32", "");
  r.data = DataSource::synthetic;
  r.placement.framework = "xpusim-cuda";
  r.placement.overrides = overrides;
  return predict(r);
}

validation::ValidationResult h200_backend_rows(const std::vector<std::string>& h200_overrides) {
  std::vector<validation::ReferenceRow> rows;
  for (const auto& r : validation::read_reference_csv(std::string(XPUSIM_MEASURED_DIR) + "/h200-2026-11-26.csv"))
    if (r.framework == "xpusim-cuda") rows.push_back(r);
  validation::ValidateOptions o;
  if (!h200_overrides.empty()) o.overrides["h200"] = h200_overrides;
  return validation::validate_rows(rows, o);
}

bool is_transformer(const std::string& m) { return m.rfind("bert", 0) == 0 || m == "gpt2"; }
bool is_large_cnn(const std::string& m) {
  return m == "resnet50" || m == "resnet152" || m == "inception_v3" || m == "vgg16";
}
bool is_small(const std::string& m) {
  return m == "mnist_mlp" || m == "mnist_cnn" || m == "cifar10_cnn" || m == "imdb_fasttext" || m == "imdb_bilstm" ||
         m == "lstm_textgen" || m == "ncf" || m == "word2vec_skipgram";
}
}  // namespace

TEST_CASE("session_run: false drops the device's per-step session cost, and only that", "[frameworks]") {
  const StepReport base = resnet50_on_h200({});
  // The device's step_overhead_ms does not reach a runtime without a session...
  const StepReport heavier_device = resnet50_on_h200({"step_overhead_ms=20"});
  CHECK(heavier_device.step_time_s == base.step_time_s);
  // ...and does, in full, once the profile runs each step through one.
  const StepReport with_session = resnet50_on_h200({"step_overhead_ms=20", "framework.session_run=true"});
  CHECK(with_session.step_time_s - base.step_time_s == Approx(0.020).margin(1e-9));
  CHECK_THROWS_WITH(resnet50_on_h200({"framework.session_run=maybe"}), Catch::Contains("session_run"));
}

TEST_CASE("the GPU model against xpusim's CUDA backend on an H200 (held out)", "[frameworks][validation]") {
  const auto now = h200_backend_rows({});
  REQUIRE(now.rows_used == 32);
  REQUIRE(now.mape_pct.has_value());
  // Charging the backend TF 1.x's session run, as every row did before it had a profile.
  const auto with_session = h200_backend_rows({"framework.session_run=true"});
  REQUIRE(with_session.mape_pct.has_value());
  CHECK(*now.mape_pct <= 31.0);                        // 29.9 % when pinned (31.1 % before GEMM alignment)
  CHECK(*with_session.mape_pct >= *now.mape_pct + 5);  // 38.8 %
  int large = 0, transformers = 0, small = 0;
  for (const auto& r : now.rows) {
    REQUIRE(r.error_pct.has_value());
    const std::string& m = r.row.model;
    const double e = *r.error_pct;
    INFO(m << " " << r.row.precision << " batch " << r.row.batch_per_device.value_or(0) << ": " << e << " %");
    if (is_large_cnn(m) && r.row.precision != "mixed_fp16") {
      ++large;
      CHECK(std::abs(e) <= 12);  // within 10 %; in mixed precision ResNet-50 +23.5 %, VGG16 +35.1 % (not pinned)
    } else if (is_transformer(m) && m == "gpt2") {
      ++transformers;
      // GPT-2's 50,257-token LM head runs unaligned kernels (gemm_alignment.hpp), priced at the
      // narrow-load bound (8x for 16-bit data, 4x for TF32) where the H200 measured 4.9-7.5x:
      // -17 % (bf16) and -13 % (TF32), +42 % and +21 % when every GEMM was priced aligned.
      CHECK(e < -5);
      CHECK(e > -25);
    } else if (is_transformer(m)) {
      ++transformers;
      CHECK(e > 15);  // missed, reported: the transformers' kernels are priced short (+17 % to +62 %)
    } else if (is_small(m)) {
      ++small;
      CHECK(e < -20);  // missed, reported: launch-bound steps at the kernel model's 25.8 us per kernel
    }
  }
  CHECK(large == 8);
  CHECK(transformers == 6);
  CHECK(small == 8);
}
