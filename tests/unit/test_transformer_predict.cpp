// Transformer models through predict(): tokens/s next to sequences/s (only for the
// transformer family, so other reports keep their shape), and the TPU lowering of attention
// against the MXU's own limit.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "common/config_paths.hpp"
#include "predict/predict.hpp"
#include "tests/unit/predict_request.hpp"
#include "sim/tpu/tpu_spec.hpp"

using namespace xpusim;

namespace {

PredictRequest a100(const std::string& model, int64_t batch) {
  return fixtures::predict_request("a100_sxm4_40gb", 1, model, batch, "mixed_fp16");
}

PredictRequest gpt2_v3_8() { return fixtures::predict_request("tpu_v3", 8, "gpt2", 8, "bf16", "cloud_tpu_v3-8"); }

}  // namespace

TEST_CASE("Transformer reports give tokens/s = sequences/s x sequence length", "[transformer][predict]") {
  StepReport g = predict(a100("gpt2", 8));
  REQUIRE(g.throughput_samples_per_s > 0);
  CHECK(g.throughput_tokens_per_s == Approx(g.throughput_samples_per_s * 1024));
  CHECK(g.to_json().contains("throughput_tokens_per_s"));
  StepReport b = predict(a100("bert_base", 32));
  CHECK(b.throughput_tokens_per_s == Approx(b.throughput_samples_per_s * 128));
  // Not a token-wise model: no field, so existing outputs are unchanged.
  StepReport r = predict(a100("resnet50", 32));
  CHECK(r.throughput_tokens_per_s == 0);
  CHECK_FALSE(r.to_json().contains("throughput_tokens_per_s"));
}

TEST_CASE("TPU: GPT-2 attention runs within a small factor of the MXU limit", "[transformer][tpu]") {
  // Forward attention is 4 N T^2 D FLOPs per layer (Q K^T and P V); its two GEMMs per
  // (batch, head) have a 64-deep contraction or 64 output columns (dh = 64), so at best they
  // fill half of a 128 x 128 array: the bound below allows that factor 2, the softmax on the
  // vector unit and the weight-load latency of each small GEMM, another factor 2. (Chunking
  // each GEMM's rows instead of the (batch, head) products made it 50x the limit.)
  const tpu::TpuSpec s = tpu::load_tpu_spec(config_dir() + "/devices/tpu_v3.yaml");
  const double peak = 2.0 * s.mxu_rows * s.mxu_cols * s.mxu_count * s.clock_mhz * 1e6;  // FLOP/s per core
  const double n = 8, t = 1024, d = 768, layers = 12;
  const double ideal_fwd = layers * 4 * n * t * t * d / peak;  // per_op_s sums the 12 layers
  StepReport rep = predict(gpt2_v3_8());
  REQUIRE(rep.fits_in_memory);
  INFO("attention " << rep.per_op_s.at("attention") << " s, ideal " << ideal_fwd << " s");
  CHECK(rep.per_op_s.at("attention") < 4 * ideal_fwd);
  CHECK(rep.per_op_s.at("attention_backward") < 4 * 2 * ideal_fwd);
  CHECK(rep.throughput_tokens_per_s == Approx(rep.throughput_samples_per_s * 1024));
}
