// GEMM operand alignment on the tensor cores (devices/analytical/gemm_alignment.hpp): a leading
// dimension that is not a multiple of 16 bytes sends a GEMM to unaligned kernels, priced at the
// faster of the narrow-load tensor-core rate and the CUDA cores; a stack that pads its
// dimensions pays nothing. Hand-derived numbers on one dense layer, then GPT-2's LM head.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "devices/analytical/gemm_alignment.hpp"
#include "devices/analytical/op_cost.hpp"
#include "models/builder.hpp"
#include "models/training.hpp"
#include "models/work.hpp"
#include "predict/predict.hpp"
#include "tests/unit/kernel_rates.hpp"
#include "tests/unit/predict_request.hpp"
#include "validation/reference_csv.hpp"
#include "validation/validate.hpp"
#include "xpusim_test_paths.hpp"

using namespace xpusim;
using namespace xpusim::analytical;

namespace {
OpAttrs gemm(int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b) {
  OpAttrs a;
  a.m = m, a.n = n, a.k = k, a.trans_a = trans_a, a.trans_b = trans_b;
  return a;
}

// 400 TFLOP/s tensor cores, 20 TFLOP/s CUDA cores, memory and L2 far from binding, no launch cost.
Rates rates(int padded_to) {
  Rates r = test::kernel_model_rates({.tensor_flops_s = 400e12, .gemm_flops_s = 20e12, .memory_bytes_s = 1e15,
                                      .op_overhead_s = 0, .sm_count = 100, .smem_kib_per_sm = 228,
                                      .pipeline_stages = 3, .l2_bytes = 50e6});
  r.gemm_dims_padded_to = padded_to;
  return r;
}

// x[4096, 768] -> dense `units` (no bias), mixed precision: the forward matmul's index.
int dense_matmul(OpGraph& g, int64_t units) {
  ModelBuilder b(g, 4096, Precision::mixed_fp16);
  const int x = b.image_input(768, 1, 1);
  b.dense(b.global_avg_pool(x, "gap"), units, false, "fc");
  count_all_work(g);
  for (int i = 0; i < g.num_ops(); ++i)
    if (g.op(i).kind == OpKind::MatMul) return i;
  return -1;
}
// One synthetic-data training step of a zoo model on one GPU under a framework profile.
StepReport step(const std::string& device, const std::string& model, int batch, const std::string& precision,
                const std::string& framework) {
  PredictRequest r = fixtures::predict_request(device, 1, model, batch, precision, "");
  r.data = DataSource::synthetic;
  r.placement.framework = framework;
  return predict(r);
}

// The rows of one model in the H200 batch-scaling file (held out), validated; `expected` of them.
validation::ValidationResult scaling_rows(const std::string& model, size_t expected) {
  std::vector<validation::ReferenceRow> rows;
  for (const auto& r : validation::read_reference_csv(std::string(XPUSIM_MEASURED_DIR) + "/h200-scaling-2026-11-28.csv"))
    if (r.model == model) rows.push_back(r);
  REQUIRE(rows.size() == expected);
  auto v = validation::validate_rows(rows, {});
  REQUIRE(v.rows_used == static_cast<int>(expected));
  return v;
}
}  // namespace

TEST_CASE("alignment: the widest access every leading dimension allows, after the stack's padding", "[kernel_model][alignment]") {
  // GPT-2's LM head, forward: x[M, 768] (ld 768) x W^T (W [50257, 768], ld 768) -> C [M, 50257]:
  // the output's leading dimension is odd, so 16-bit loads go one element (2 bytes) at a time.
  CHECK(gemm_access_bytes(gemm(8192, 50257, 768, false, true), 2, 0) == 2);
  // Data gradient dX[M, 768] = dY[M, 50257] (ld 50257) x W; weight gradient dW = dY^T x X,
  // dY read transposed: A stored [K, M] = [tokens, 50257], ld = m = 50257.
  CHECK(gemm_access_bytes(gemm(8192, 768, 50257, false, false), 2, 0) == 2);
  CHECK(gemm_access_bytes(gemm(50257, 768, 8192, true, false), 2, 0) == 2);
  // BERT's 30,522 tokens: 61,044 bytes per row, a multiple of 4 and not of 16: 4-byte accesses
  // (cuBLAS's `_align2` 16-bit kernels); so is 30,524 (a multiple of 8 bytes, no kernel for it).
  CHECK(gemm_access_bytes(gemm(8192, 30522, 1024, false, true), 2, 0) == 4);
  CHECK(gemm_access_bytes(gemm(8192, 30524, 1024, false, true), 2, 0) == 4);
  CHECK(gemm_access_bytes(gemm(8192, 30528, 1024, false, true), 2, 0) == 16);
  // Padded to a multiple of 8 (NVIDIA's BERT and GNMT), 128 (Megatron-LM): aligned.
  CHECK(gemm_access_bytes(gemm(8192, 50257, 768, false, true), 2, 8) == 16);
  CHECK(gemm_access_bytes(gemm(50257, 768, 8192, true, false), 2, 128) == 16);
  // The token count is never a leading dimension of a dense layer's GEMMs: an odd one is fine.
  CHECK(gemm_access_bytes(gemm(8191, 3072, 768, false, false), 2, 0) == 16);
  CHECK(gemm_access_bytes(gemm(768, 3072, 8191, true, false), 2, 0) == 16);
  // TF32 (fp32 storage): 16-byte vectors hold 4 elements; below that one 4-byte element per access.
  CHECK(gemm_access_bytes(gemm(8192, 50260, 768, false, true), 4, 0) == 16);
  CHECK(gemm_access_bytes(gemm(8192, 50258, 768, false, true), 4, 0) == 4);
  CHECK(gemm_access_bytes(gemm(8192, 50257, 768, false, true), 4, 0) == 4);
  // fp8: 16 elements per vector, 4-byte accesses for a multiple of 4, else single bytes.
  CHECK(gemm_access_bytes(gemm(8192, 50260, 768, false, true), 1, 0) == 4);
  CHECK(gemm_access_bytes(gemm(8192, 50257, 768, false, true), 1, 0) == 1);
}

TEST_CASE("alignment: the faster of the narrow-load tensor-core rate and the CUDA cores", "[kernel_model][alignment]") {
  OpGraph g;
  const int mm = dense_matmul(g, 1001);
  REQUIRE(mm >= 0);
  const double flops = 2.0 * 4096 * 1001 * 768;
  // 1001 columns of 2 bytes: one-element loads, 2/16 of the rate. 400 TFLOP/s tensor cores / 8
  // = 50 > 20 on the CUDA cores: the narrowed tensor-core kernel.
  const OpCost fast_tensor = OpCostModel(rates(0)).visit(g, mm);
  CHECK(fast_tensor.unaligned);
  CHECK(fast_tensor.math_s * 50e12 * fast_tensor.wave_efficiency == Approx(flops));
  // A Turing-like card: 27.5 TFLOP/s tensor cores / 8 = 3.4 < 11.7 on the CUDA cores, which win
  // (cuBLAS 10's rule: no tensor cores unless the dimensions are multiples of 8).
  Rates turing = rates(0);
  turing.tensor_flops_s = 27.5e12, turing.gemm_flops_s = 11.7e12;
  const OpCost cuda_cores = OpCostModel(turing).visit(g, mm);
  CHECK(cuda_cores.unaligned);
  CHECK(cuda_cores.math_s * 11.7e12 * cuda_cores.wave_efficiency == Approx(flops));
  // Slower than the aligned kernel the padded dimension gets.
  Rates turing_padded = turing;
  turing_padded.gemm_dims_padded_to = 8;
  CHECK(cuda_cores.time_s() > OpCostModel(turing_padded).visit(g, mm).time_s());
}

TEST_CASE("alignment: an odd output width prices the dense layer's math 8x, an even one 4x, unless the stack pads it", "[kernel_model][alignment]") {
  OpGraph odd, even;
  const int mo = dense_matmul(odd, 1001), me = dense_matmul(even, 1008);
  REQUIRE(mo >= 0);
  REQUIRE(me >= 0);
  const OpCost c_odd = OpCostModel(rates(0)).visit(odd, mo);
  const OpCost c_pad = OpCostModel(rates(8)).visit(odd, mo);
  CHECK(c_odd.unaligned);
  CHECK_FALSE(c_pad.unaligned);
  CHECK_FALSE(OpCostModel(rates(0)).visit(even, me).unaligned);
  // Same tiles and waves, math at 400 / 8 = 50 TFLOP/s instead of 400: exactly 8x.
  CHECK(c_odd.tile_m == c_pad.tile_m);
  CHECK(c_odd.tile_n == c_pad.tile_n);
  CHECK(c_odd.math_s == Approx(8 * c_pad.math_s));
  // The useful FLOPs over the paid share of the tiles at the narrowed rate: 2 x 4096 x 1001 x 768.
  CHECK(c_odd.math_s * 50e12 * c_odd.wave_efficiency == Approx(2.0 * 4096 * 1001 * 768));
  // 1002 columns (2,004 bytes, a multiple of 4): 4-byte loads, a quarter of the rate.
  OpGraph even2;
  const int m2 = dense_matmul(even2, 1002);
  const OpCost c_even2 = OpCostModel(rates(0)).visit(even2, m2);
  CHECK(c_even2.unaligned);
  CHECK(c_even2.math_s * 100e12 * c_even2.wave_efficiency == Approx(2.0 * 4096 * 1002 * 768));
  // fp32 on the CUDA cores has no 16-byte tensor-core kernels to lose.
  OpGraph f32;
  ModelBuilder b(f32, 4096, Precision::fp32);
  b.dense(b.global_avg_pool(b.image_input(768, 1, 1), "gap"), 1001, false, "fc");
  count_all_work(f32);
  Rates cuda_only = rates(0);
  cuda_only.tensor_flops_s = 0;
  for (int i = 0; i < f32.num_ops(); ++i)
    if (f32.op(i).kind == OpKind::MatMul) CHECK_FALSE(OpCostModel(cuda_only).visit(f32, i).unaligned);
}

TEST_CASE("alignment: GPT-2's 50,257-token LM head under plain PyTorch, not under Megatron-LM's padding", "[kernel_model][alignment]") {
  const StepReport plain = step("h200", "gpt2", 8, "mixed_bf16", "pytorch-2.x");
  const StepReport megatron = step("h200", "gpt2", 8, "mixed_bf16", "megatron-lm");
  REQUIRE(plain.extra.contains("unaligned_gemm_s"));
  CHECK_FALSE(megatron.extra.contains("unaligned_gemm_s"));
  const double unaligned_s = plain.extra_number("unaligned_gemm_s").value_or(0);
  // The LM head's three GEMMs (2 x 8,192 x 50,257 x 768 FLOPs each, 1.9 TFLOP in all) at an
  // eighth of the tensor-core rate take tens of milliseconds of a ~60 ms step.
  CHECK(unaligned_s > 0.01);
  CHECK(unaligned_s < plain.step_time_s);
  // The roofline GPUs (Volta here) take the same rule.
  const StepReport volta = step("v100_sxm2_16gb", "gpt2", 8, "mixed_fp16", "pytorch-2.x");
  const StepReport volta_padded = step("v100_sxm2_16gb", "gpt2", 8, "mixed_fp16", "megatron-lm");
  CHECK(volta.extra_number("unaligned_gemm_s").value_or(0) > 0.01);
  CHECK_FALSE(volta_padded.extra.contains("unaligned_gemm_s"));
}

// Held out (nothing is fitted on them): GPT-2 training steps measured on an H200 with the
// unpadded 50,257-token vocabulary (validation/measured/h200-scaling-2026-11-28.csv: the zoo's
// dimensions at batch 2-32 and Hugging Face's GPT2LMHeadModel at 4-16, PyTorch 2.11 eager, bf16).
// Priced as aligned they were +20 % to +102 % fast; with the unaligned LM head the zoo's model
// is within -13 % .. +21 % and Hugging Face's +22 % .. +51 % (its eager gelu_new and the fp32
// loss are not modelled). Pinned so a change that moves them shows.
TEST_CASE("alignment: GPT-2 steps measured on an H200 (held out)", "[kernel_model][alignment][validation]") {
  const auto v = scaling_rows("gpt2", 8);
  int zoo = 0, hf = 0;
  for (const auto& r : v.rows) {
    REQUIRE(r.error_pct.has_value());
    const double e = *r.error_pct;
    const bool is_hf = r.row.note.find("Hugging Face") != std::string::npos;
    INFO((is_hf ? "HF " : "zoo ") << "batch " << r.row.batch_per_device.value_or(0) << ": " << e << " %");
    if (is_hf) {
      ++hf;
      CHECK(e > 15);  // 22.4 % .. 50.8 %
      CHECK(e < 55);
    } else if (r.row.batch_per_device.value_or(0) >= 4) {
      ++zoo;
      CHECK(std::abs(e) < 15);  // -12.3 % .. -7.8 %
    } else {
      ++zoo;
      CHECK(e > 10);  // batch 2: +20.9 %, the host's dispatch bounds the step (GPU busy 50 %)
      CHECK(e < 30);
    }
  }
  CHECK(zoo == 5);
  CHECK(hf == 3);
}

// The same file's BERT-base rows (batch 16-128, sequence 128; no odd dimension on the tensor
// cores): missed, reported. The kernels fill 30-48 % of the step at batch 16-64 (the host's
// dispatch, ~43 us per kernel on that machine, bounds it) and 77 % at 128, while the model
// charges 17 us per kernel in series: +64 % .. +67 % fast at 16-64, +22 % at 128.
TEST_CASE("alignment: BERT-base steps measured on an H200 are host-bound, and missed (held out)", "[kernel_model][alignment][validation]") {
  const auto v = scaling_rows("bert_base", 4);
  // The 2-class head is off the tensor cores: no unaligned GEMM.
  CHECK_FALSE(step("h200", "bert_base", 16, "mixed_bf16", "pytorch-2.x").extra.contains("unaligned_gemm_s"));
  for (const auto& r : v.rows) {
    REQUIRE(r.error_pct.has_value());
    const int batch = r.row.batch_per_device.value_or(0);
    INFO("batch " << batch << ": " << *r.error_pct << " %");
    if (batch <= 64) {
      CHECK(*r.error_pct > 50);
      CHECK(*r.error_pct < 80);
    } else {
      CHECK(*r.error_pct > 10);
      CHECK(*r.error_pct < 35);
    }
  }
}
