// The large-model layer's second round (issue 30c): expert-parallel load imbalance, fp8
// scaling / cast overheads and weight copies, tensor-parallel communication overlap; hand-derived
// numbers and a seeded Monte Carlo of uniform top-k routing.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "parallel/llm_memory.hpp"
#include "parallel/llm_search.hpp"
#include "parallel/llm_time.hpp"
#include "predict/llm_plan_chart.hpp"
#include "tests/unit/llm_fixture.hpp"

using namespace xpusim;
using namespace xpusim::parallel;
using namespace xpusim::parallel::test;

namespace {

// Mixtral 8x7B's shape (Jiang et al. 2024): 32 layers, h 4096, 32 / 8 heads, 8 SwiGLU experts
// of 14336, top-2, no dropout, flash attention.
LlmJob mixtral_job() {
  LlmJob j;
  LlmShape& s = j.shape;
  s.layers = 32, s.hidden = 4096, s.heads = 32, s.kv_heads = 8, s.ffn_hidden = 14336, s.vocab = 32000;
  s.norm = LlmNorm::rms_norm, s.mlp = LlmMlp::swiglu, s.position = LlmPosition::rotary, s.bias = false;
  s.tied_embeddings = false, s.experts = 8, s.top_k = 2, s.capacity_factor = 1.0;
  j.seq_len = 4096;
  j.global_batch = 64;
  j.stack.flash_attention = true;
  return j;
}

// Mean over `trials` of the busiest rank's count over the mean count, tokens routed to top_k
// distinct experts of E uniformly, experts dealt to ep ranks in contiguous blocks.
double monte_carlo_load(int E, int k, int ep, int tokens_per_rank, int trials) {
  std::mt19937_64 rng(12345);
  std::vector<int> experts(static_cast<size_t>(E));
  double sum = 0;
  const double mean = static_cast<double>(tokens_per_rank) * k;  // per rank: T ep k / ep
  for (int t = 0; t < trials; ++t) {
    std::vector<int> load(static_cast<size_t>(ep), 0);
    for (int tok = 0; tok < tokens_per_rank * ep; ++tok) {
      std::iota(experts.begin(), experts.end(), 0);
      for (int i = 0; i < k; ++i) {  // partial Fisher-Yates: k distinct experts
        std::uniform_int_distribution<int> pick(i, E - 1);
        std::swap(experts[static_cast<size_t>(i)], experts[static_cast<size_t>(pick(rng))]);
        ++load[static_cast<size_t>(experts[static_cast<size_t>(i)] / (E / ep))];
      }
    }
    sum += *std::max_element(load.begin(), load.end()) / mean;
  }
  return sum / trials;
}

}  // namespace

TEST_CASE("expected maximum of n standard normals (Blom 1958)", "[llm][moe]") {
  CHECK(expected_max_std_normal(1) == 0);
  // Blom's Phi^-1((n - 0.375) / (n + 0.25)), and within 5% of the exact values.
  CHECK(expected_max_std_normal(8) == Approx(1.43420).epsilon(1e-4));
  CHECK(expected_max_std_normal(2) == Approx(1 / std::sqrt(M_PI)).epsilon(0.05));  // exact: 0.5642
  CHECK(expected_max_std_normal(8) == Approx(1.4236).epsilon(0.01));               // Harter 1961
  CHECK(expected_max_std_normal(16) == Approx(1.7660).epsilon(0.01));
}

TEST_CASE("expert-parallel load imbalance: hand-derived and against uniform routing", "[llm][moe]") {
  const LlmJob j = mixtral_job();
  // 4,096 tokens per rank, top-2 of 8, ep 8: 1 + z(8) sqrt((8 - 2) / (7 x 4096 x 2)).
  CHECK(moe_rank_load_factor(j.shape, 4096, 8) == Approx(1 + 1.43420 * std::sqrt(6.0 / (7 * 8192))).epsilon(1e-6));
  CHECK(moe_rank_load_factor(j.shape, 4096, 8) == Approx(1.014670).epsilon(1e-5));
  // Fewer tokens per rank, more imbalance; one rank has none to balance.
  CHECK(moe_rank_load_factor(j.shape, 64, 8) == Approx(1.117363).epsilon(1e-5));
  CHECK(moe_rank_load_factor(j.shape, 64, 1) == 1.0);
  // The capacity-factor buffers bound it from below: padded to C when C exceeds the expected max.
  LlmShape padded = j.shape;
  padded.capacity_factor = 1.25;
  CHECK(moe_rank_load_factor(padded, 4096, 8) == 1.25);
  CHECK(moe_rank_load_factor(padded, 4, 8) > 1.25);
  // Every expert visited by every token: balanced.
  LlmShape all = j.shape;
  all.top_k = 8;
  CHECK(moe_rank_load_factor(all, 64, 8) == 1.0);
  // A dense model.
  LlmShape dense = j.shape;
  dense.experts = 1, dense.top_k = 1;
  CHECK(moe_rank_load_factor(dense, 64, 8) == 1.0);
  // A seeded simulation of the routing the formula assumes agrees within 1.5%.
  CHECK(moe_rank_load_factor(j.shape, 64, 8) == Approx(monte_carlo_load(8, 2, 8, 64, 400)).epsilon(0.015));
  CHECK(moe_rank_load_factor(j.shape, 64, 4) == Approx(monte_carlo_load(8, 2, 4, 64, 400)).epsilon(0.015));
  CHECK(moe_rank_load_factor(j.shape, 64, 2) == Approx(monte_carlo_load(8, 2, 2, 64, 400)).epsilon(0.015));
}

TEST_CASE("expert parallelism: all-to-all and expert work at the busiest rank's load", "[llm][moe]") {
  LlmJob j = mixtral_job();
  j.seq_len = 256;  // 256 tokens per rank: a visible imbalance
  j.global_batch = 8;
  const FlatPricer k(200e12);  // fp8 GEMMs at twice the 16-bit rate
  const LlmNetwork n = net(100e9, 10e9);
  LlmConfig c;
  c.dp = 8, c.ep = 8, c.micro_batch = 1;
  const LlmLayerCost lc = llm_layer_cost(j, 1, 1, 1, false, k);
  // The routed part of the layer: up (2 x 14336) and down GEMMs on T k rows, SwiGLU traffic.
  const double T = 256, h = 4096, f = 14336, kk = 2;
  const double moe_gemm = 2 * T * kk * (h * 2 * f + f * h) / 100e12;
  const double act = 3 * 2 * T * kk * f / 1e12;
  CHECK(lc.moe_fwd_s == Approx(moe_gemm + act));
  CHECK(lc.moe_bwd_s == Approx(2 * moe_gemm + 2 * act));
  const LlmTime t = llm_step_time(j, c, lc, k, n);
  const double I = 1 + 1.43420 * std::sqrt(6.0 / (7 * T * kk));
  CHECK(t.moe_load_factor == Approx(I).epsilon(1e-5));
  // Four all-to-alls per layer of T k I tokens x h x 2 bytes; ep 8 inside a node: 7/8 over NVLink.
  const double a2a = 7.0 / 8 * 2 * T * h * kk * I / 100e9;
  CHECK(t.ep_comm_s == Approx(32 * 4 * a2a));
  // Against the balanced step (ep 1 keeps every expert's rows on the rank): the compute differs
  // by the imbalance share of the routed work.
  LlmConfig bal = c;
  bal.ep = 1;
  const LlmTime tb = llm_step_time(j, bal, lc, k, n);
  CHECK(t.compute_s - tb.compute_s == Approx(32 * (I - 1) * (lc.moe_fwd_s + lc.moe_bwd_s)));
  // The busiest rank keeps I times the balanced MLP activations.
  const LlmMemory m = llm_memory(j, c), mb = llm_memory(j, bal);
  CHECK(m.activations - mb.activations == Approx(32 * (I - 1) * kk * 3 * 2 * T * f));
}

TEST_CASE("fp8: casts and scale updates around each GEMM, by hand", "[llm][fp8]") {
  LlmJob j = small_job();
  CHECK(fp8_cast_bytes(j, 2048, 2).fwd == 0);  // 16-bit: no casts
  j.precision.fp8 = true;
  const double T = 2048, h = 1024, f = 4096, t = 2;
  const Fp8CastBytes c = fp8_cast_bytes(j, T, 2);
  // Forward: (2 + 1 + 1) bytes per element of the QKV [T, h], projection [T, h/t], up [T, h]
  // and down [T, f/t] inputs; backward: the output gradients [T, 3h/t], [T, h], [T, f/t], [T, h].
  CHECK(c.fwd == Approx(4 * (T * h + T * h / t + T * h + T * f / t)));
  CHECK(c.bwd == Approx(4 * (T * 3 * h / t + T * h + T * f / t + T * h)));
  CHECK(c.kernels == 5);
  FlatPricer k(200e12);  // fp8 GEMMs at twice the 16-bit rate
  k.launch_s = 1e-6;
  const LlmLayerCost lc = llm_layer_cost(j, 1, 2, 1, false, k);
  CHECK(lc.fp8_cast_fwd_s == Approx(c.fwd / 1e12 + 5e-6));
  CHECK(lc.fp8_cast_bwd_s == Approx(c.bwd / 1e12 + 5e-6));
}

TEST_CASE("fp8: a 1-byte copy of the layers' weights and its cast once per step", "[llm][fp8]") {
  LlmJob j = small_job();
  const FlatPricer k(200e12);  // fp8 GEMMs at twice the 16-bit rate
  const LlmNetwork n = net(100e9, 10e9);
  LlmConfig c;
  c.dp = 4, c.tp = 2, c.micro_batch = 1;
  const LlmMemory m16 = llm_memory(j, c);
  CHECK(m16.fp8_weights == 0);
  const double layer = llm_layer_parameters(j.shape);  // 12 h^2 + biases and norms
  CHECK(layer == Approx(12.0 * 1024 * 1024 + 13 * 1024));
  j.precision.fp8 = true;
  j.precision.fp8_weight_copy_bytes = 1;
  const LlmMemory m8 = llm_memory(j, c);
  CHECK(m8.fp8_weights == Approx(8 * layer / 2));           // 8 layers / tp 2, one byte each
  CHECK(m8.weights == Approx(m16.weights));                  // the 16-bit copy stays
  CHECK(m8.total() - m16.total() == Approx(8 * layer / 2));
  c.zero = ZeroStage::parameters;                            // sharded as the weights are
  CHECK(llm_memory(j, c).fp8_weights == Approx(8 * layer / 2 / 4));
  c.zero = ZeroStage::none;
  // The step's optimizer phase adds the cast: read 2 bytes, write 1, per local layer parameter.
  const LlmLayerCost lc = llm_layer_cost(j, 1, 2, 1, false, k);
  LlmJob j16 = small_job();
  const double opt16 = llm_step_time(j16, c, lc, k, n).optimizer_s;
  CHECK(llm_step_time(j, c, lc, k, n).optimizer_s - opt16 == Approx(8 * layer / 2 * 3 / 1e12));
}

TEST_CASE("tensor-parallel overlap: none by default, a share of the collectives with SP", "[llm][tp]") {
  // The rule alone: 10 ms of collectives, 30 ms of GEMMs.
  CHECK(tp_comm_exposed_s(10e-3, 30e-3, 0.0, true) == 10e-3);
  CHECK(tp_comm_exposed_s(10e-3, 30e-3, 0.8, false) == 10e-3);  // all-reduces: on the compute stream
  CHECK(tp_comm_exposed_s(10e-3, 30e-3, 0.8, true) == Approx(2e-3));
  CHECK(tp_comm_exposed_s(10e-3, 4e-3, 0.8, true) == Approx(6e-3));  // no more than the GEMMs hide
  // In a step: small decoder, tp 8 with SP over a 100 GB/s NVLink ring.
  LlmJob j = small_job();
  const FlatPricer k(200e12);  // fp8 GEMMs at twice the 16-bit rate
  const LlmNetwork n = net(100e9, 10e9);
  LlmConfig c;
  c.tp = 8, c.dp = 1, c.micro_batch = 1, c.sequence_parallel = true;
  const LlmLayerCost lc = llm_layer_cost(j, 1, 8, 1, true, k);
  const double T = 2048, h = 1024;
  const double per_layer = 4 * 2 * 7.0 / 8 * 2 * T * h / 100e9;  // 4 all-reduce volumes of 2 T h bytes
  const LlmTime none = llm_step_time(j, c, lc, k, n);
  CHECK(none.tp_comm_s == Approx(64 * 8 * per_layer));           // 64 micro-batches x 8 layers
  j.stack.tp_comm_overlap = 0.5;
  const LlmTime half = llm_step_time(j, c, lc, k, n);
  CHECK(lc.gemm_fwd_s + lc.gemm_bwd_s > 0.5 * per_layer);         // the GEMMs can hide half
  CHECK(half.tp_comm_s == Approx(0.5 * none.tp_comm_s));
  CHECK(none.step_s - half.step_s == Approx(0.5 * none.tp_comm_s));
  c.sequence_parallel = false;                                    // all-reduces: nothing hidden
  CHECK(llm_step_time(j, c, llm_layer_cost(j, 1, 8, 1, false, k), k, n).tp_comm_s == Approx(none.tp_comm_s));
}

TEST_CASE("plan chart: the Pareto front of time vs cost", "[llm][chart]") {
  // (days, $): (1, 100) and (2, 60) and (4, 50) are on the front; (2, 120) is beaten by (1, 100),
  // (3, 60) by (2, 60); the tie (4, 50) twice keeps one.
  std::vector<PlanChartPoint> p(6);
  const double pts[6][2] = {{2, 120}, {1, 100}, {4, 50}, {2, 60}, {3, 60}, {4, 50}};
  for (size_t i = 0; i < 6; ++i) p[i].gpus = 8, p[i].train_days = pts[i][0], p[i].cost = pts[i][1], p[i].label = "c";
  const std::vector<size_t> front = pareto_front(p);
  REQUIRE(front.size() == 3);
  CHECK(front[0] == 1);
  CHECK(front[1] == 3);
  CHECK(front[2] == 2);
  const std::string svg = plan_pareto_svg("test", p, true);
  CHECK(svg.find("time to train (days)") != std::string::npos);
  CHECK(svg.find("cost to train (US$)") != std::string::npos);
  CHECK(svg.find("Pareto front") != std::string::npos);
  CHECK(plan_pareto_svg("test", p, false).find("GPU time to train (GPU-hours)") != std::string::npos);
}
