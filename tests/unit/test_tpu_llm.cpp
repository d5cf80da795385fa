// Large models on TPU slices (issue 32): the TPU planner's pieces checked by hand -- mapping
// tp and FSDP onto a slice's torus, the FSDP all-gather over a 16x16 v5e slice, the DCN
// all-reduce between slices, the step's composition (DCN per layer, state sharded inside the
// slice only), slice names as clusters, and the planner's errors.
#include <catch2/catch.hpp>

#include "common/error.hpp"
#include "parallel/tpu_cluster.hpp"
#include "parallel/tpu_llm.hpp"
#include "predict/llm_plan.hpp"

using namespace xpusim;
using namespace xpusim::parallel;

namespace {

Torus v5e_256() {  // 16x16 chips, both dimensions wrapped, 50 GB/s per link and direction
  Torus t;
  t.dims = {{16, true}, {16, true}};
  t.link_bytes_per_s = 50e9;
  t.hop_latency_s = 2e-6;
  return t;
}

// Every GEMM costs its FLOPs at 100 TFLOP/s: enough to check how the step composes.
class FlatPricer final : public LlmKernelPricer {
 public:
  FlatPricer() { memory_bytes_s = 1e12, peak_flops_s = 100e12; }
  double gemm_s(double m, double n, double k, double batch, bool) const override { return 2 * m * n * k * batch / 100e12; }
};

LlmJob small_job() {
  LlmJob j;
  LlmShape& s = j.shape;
  s.layers = 2, s.hidden = 256, s.heads = 2, s.kv_heads = 2, s.attention_head_dim = 128, s.ffn_hidden = 512;
  s.vocab = 1000, s.norm = LlmNorm::rms_norm, s.mlp = LlmMlp::swiglu, s.position = LlmPosition::rotary;
  s.bias = false, s.norm_bias = false, s.tied_embeddings = false;
  j.seq_len = 128;
  j.global_batch = 1024;
  j.stack.flash_attention = true;
  return j;
}

}  // namespace

TEST_CASE("tpu mesh: tp innermost on the torus, FSDP on the rest", "[tpu_llm]") {
  TpuMeshGroups g;
  REQUIRE(tpu_mesh_groups(v5e_256(), 16, g).empty());
  REQUIRE(g.tp.dims.size() == 1);
  CHECK(g.tp.dims[0].size == 16);
  CHECK(g.tp.dims[0].wrap);
  REQUIRE(g.fsdp.dims.size() == 1);
  CHECK(g.fsdp.chips() == 16);
  // tp 4: a 4-chip line segment of dimension 0; FSDP gets its 4 strided sub-rings (each a
  // quarter of the links) and all of dimension 1.
  REQUIRE(tpu_mesh_groups(v5e_256(), 4, g).empty());
  REQUIRE(g.tp.dims.size() == 1);
  CHECK(g.tp.dims[0].size == 4);
  CHECK_FALSE(g.tp.dims[0].wrap);
  CHECK(g.tp.dim_bytes_per_s(0) == Approx(50e9));
  REQUIRE(g.fsdp.dims.size() == 2);
  CHECK(g.fsdp.chips() == 64);
  CHECK(g.fsdp.dim_bytes_per_s(0) == Approx(2 * 50e9 / 4));
  CHECK(g.fsdp.dim_bytes_per_s(1) == Approx(100e9));
  // tp 1: FSDP is the whole slice; tp 256: tp is.
  REQUIRE(tpu_mesh_groups(v5e_256(), 1, g).empty());
  CHECK(g.tp.dims.empty());
  CHECK(g.fsdp.chips() == 256);
  REQUIRE(tpu_mesh_groups(v5e_256(), 256, g).empty());
  CHECK(g.fsdp.dims.empty());
  CHECK(tpu_mesh_groups(v5e_256(), 512, g).rfind("tp: 512 is larger than a slice (256 chips)", 0) == 0);
  CHECK(tpu_mesh_groups(v5e_256(), 3, g).rfind("tp: 3 does not map", 0) == 0);
}

TEST_CASE("tpu FSDP all-gather over a 16x16 v5e slice and the DCN all-reduce", "[tpu_llm]") {
  TpuMeshGroups g;
  REQUIRE(tpu_mesh_groups(v5e_256(), 1, g).empty());
  // One layer of maxtext_32b in bf16: 972,570,624 parameters x 2 bytes. 256 chips, two wrapped
  // dims of 2 x 50 GB/s: 255/256 x 1.945 GB / 200 GB/s = 9.687 ms, plus 2 x 15 hops x 2 us.
  const double bytes = 972570624.0 * 2;
  const auto ag = torus_collective(g.fsdp, TorusCollective::all_gather, bytes);
  CHECK(ag.bandwidth_s == Approx(255.0 / 256 * bytes / 200e9));
  CHECK(ag.bandwidth_s == Approx(9.6878e-3).epsilon(1e-4));
  CHECK(ag.latency_s == Approx(60e-6));
  // With tp 4 the FSDP group is 64 chips on 25 + 100 GB/s: 63/64 x B / 125 GB/s, 3 + 15 steps.
  REQUIRE(tpu_mesh_groups(v5e_256(), 4, g).empty());
  const auto ag4 = torus_collective(g.fsdp, TorusCollective::all_gather, bytes);
  CHECK(ag4.bandwidth_s == Approx(63.0 / 64 * bytes / 125e9));
  CHECK(ag4.latency_s == Approx(18 * 2e-6));
  // DCN: 4 slices, 100 MB per chip, 3.125 GB/s per chip (200 Gb/s host NIC over 8 chips),
  // 500 us per ring step: 2 x 3/4 x 0.1 GB / 3.125 GB/s + 6 x 500 us = 48 ms + 3 ms.
  Dcn d;
  d.slices = 4, d.bytes_per_s_per_chip = 200e9 / 8 / 8, d.latency_s = 500e-6;
  const auto ar = dcn_all_reduce(d, 100e6);
  CHECK(ar.bandwidth_s == Approx(0.048));
  CHECK(ar.latency_s == Approx(0.003));
  d.slices = 1;
  CHECK(dcn_all_reduce(d, 100e6).seconds == 0);
}

TEST_CASE("tpu step: DCN per layer across slices, model state sharded inside a slice only", "[tpu_llm]") {
  const LlmJob job = small_job();
  const FlatPricer k;
  TpuFabric one;
  one.slice = v5e_256();
  TpuFabric four = one;
  four.dcn.slices = 4, four.dcn.bytes_per_s_per_chip = 3.125e9, four.dcn.latency_s = 500e-6;
  TpuMeshGroups g;
  REQUIRE(tpu_mesh_groups(one.slice, 1, g).empty());
  LlmConfig c1;
  c1.dp = 256, c1.micro_batch = 4, c1.zero = ZeroStage::parameters, c1.recompute = Recompute::full;
  LlmConfig c4 = c1;
  c4.dp = 1024;
  LlmJob job4 = job;
  job4.global_batch = 4096;  // 4 sequences per chip on 1024 chips: one micro-batch, as on 256
  const LlmLayerCost cost = llm_layer_cost(job, 4, 1, 1, false, k);
  const LlmTime t1 = tpu_llm_step_time(job, c1, cost, k, one, g, {});
  const LlmTime t4 = tpu_llm_step_time(job4, c4, cost, k, four, g, {});
  // A layer: 4 x 256 x 256 (q, k, v, o) + 3 x 256 x 512 (SwiGLU) + 2 x 256 (norms) = 655,872
  // parameters; the root unit: 2 x 1000 x 256 (embedding, head) + 256 (final norm) = 512,256.
  // fp32 gradients sharded over the 256 chips of a slice, all-reduced over 4 slices each.
  Dcn d = four.dcn;
  const double dcn = 2 * dcn_all_reduce(d, 655872.0 * 4 / 256).seconds + dcn_all_reduce(d, 512256.0 * 4 / 256).seconds;
  CHECK(t4.dp_comm_s - t1.dp_comm_s == Approx(dcn));
  CHECK(t4.compute_s == Approx(t1.compute_s));
  CHECK(t4.step_s - t1.step_s == Approx(dcn));
  // FSDP inside the slice: the same state per chip on 1 or 4 slices.
  const LlmMemory m1 = tpu_llm_memory(job, c1, one, {}), m4 = tpu_llm_memory(job4, c4, four, {});
  CHECK(m4.weights == Approx(m1.weights));
  CHECK(m1.optimizer == Approx((2 * 655872.0 + 512256.0) * 12 / 256));
  // Offloaded activations leave HBM.
  TpuJobOptions off;
  off.offload_activations = true;
  LlmConfig cs = c1;
  cs.recompute = Recompute::selective;
  CHECK(tpu_llm_memory(job, cs, one, off).activations == 0);
  CHECK(tpu_llm_memory(job, cs, one, {}).activations > 0);
}

TEST_CASE("tpu slice names are clusters", "[tpu_llm]") {
  auto a = parse_tpu_cluster_name("v5e-256");
  REQUIRE(a);
  CHECK(a->device == "tpu_v5e");
  CHECK(a->slice == "v5e-256");
  CHECK_FALSE(a->multislice);
  auto b = parse_tpu_cluster_name("tpu_v5e_256_multislice");
  REQUIRE(b);
  CHECK(b->slice == "v5e-256");
  CHECK(b->multislice);
  CHECK(parse_tpu_cluster_name("v5litepod-16")->device == "tpu_v5e");
  CHECK(parse_tpu_cluster_name("v5p-256")->device == "tpu_v5p");
  CHECK_FALSE(parse_tpu_cluster_name("hgx_h100_ib3200"));
  CHECK_FALSE(parse_tpu_cluster_name("v9z-256"));  // no such device
  CHECK_FALSE(parse_tpu_cluster_name("v5e-abc"));
}

TEST_CASE("tpu plan: slices, chip counts and tp checked; v5p counts TensorCores", "[tpu_llm]") {
  LlmPlanRequest r;
  r.model = "llama3_70b";
  r.seq_len = 8192;
  r.global_batch = 128;
  r.gpus = 0;
  r.keep = 3;
  auto field_of = [&](const LlmPlanRequest& q) {
    try {
      plan_llm(q);
    } catch (const FieldError& e) {
      return e.field();
    }
    return std::string("none");
  };
  r.cluster = "v5e-100";
  CHECK(field_of(r) == "cluster");
  r.cluster = "v5e-256";
  r.gpus = 300;
  CHECK(field_of(r) == "gpus");
  r.gpus = 512;
  r.fixed.tp = 512;
  CHECK(field_of(r) == "tp");
  r.fixed.tp.reset();
  r.gpus = 0;
  const LlmPlanResult v5e = plan_llm(r);
  CHECK(v5e.gpus == 256);
  CHECK(v5e.device == "tpu_v5e");
  REQUIRE(!v5e.search.ranked.empty());
  CHECK(v5e.search.ranked.front().tokens_per_s >= v5e.search.ranked.back().tokens_per_s);
  r.cluster = "v5p-256";
  const LlmPlanResult v5p = plan_llm(r);
  CHECK(v5p.gpus == 128);  // v5p-256 counts TensorCores: 128 chips in a 4x4x8 torus
  REQUIRE(!v5p.search.ranked.empty());
  // 459 TFLOP/s per v5p chip, 197 per v5e chip.
  CHECK(v5p.peak_flops_s == Approx(459e12).epsilon(0.01));
  CHECK(v5e.peak_flops_s == Approx(197e12).epsilon(0.01));
}
