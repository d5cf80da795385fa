// The large-model layer (parallel/llm_*.hpp, parallel/cluster.hpp): activation memory by
// Korthikanti et al. 2022 for each recompute / sequence-parallel mode, ZeRO sharding of the
// model state, hierarchical collectives, the pipeline bubble, the divisibility checks and the
// configuration search, with hand-derived numbers.
#include <catch2/catch.hpp>

#include <cmath>

#include "common/error.hpp"
#include "devices/analytical/device_spec.hpp"
#include "parallel/cluster.hpp"
#include "parallel/llm_memory.hpp"
#include "parallel/llm_search.hpp"
#include "parallel/llm_time.hpp"
#include "tests/unit/llm_fixture.hpp"

using namespace xpusim;
using namespace xpusim::parallel;
using namespace xpusim::parallel::test;

namespace {

// GPT-3 175B's shape (Brown et al. 2020; the Korthikanti et al. running example): h 12288,
// 96 heads, 96 layers, MLP 4h, GELU, learned positions, dropout, materialized attention.
LlmJob gpt3_job() {
  LlmJob j;
  LlmShape& s = j.shape;
  s.layers = 96, s.hidden = 12288, s.heads = 96, s.kv_heads = 96, s.ffn_hidden = 4 * 12288, s.vocab = 51200;
  s.max_positions = 2048;
  j.seq_len = 2048;
  j.global_batch = 1536;
  j.stack.dropout = true;
  j.stack.flash_attention = false;
  return j;
}

}  // namespace

TEST_CASE("activation memory per layer equals Korthikanti et al.'s formulas", "[llm][memory]") {
  const LlmJob j = gpt3_job();
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8;
  const double sbh = s * b * h;
  // Table 2 of the paper, 16-bit activations, bytes per layer.
  CHECK(layer_activation_bytes(j, 1, 2048, 1, false, Recompute::none) == Approx(sbh * (34 + 5 * a * s / h)));
  CHECK(layer_activation_bytes(j, 1, 2048, 8, false, Recompute::none) ==
        Approx(sbh * (10 + 24 / t + 5 * a * s / (h * t))));
  CHECK(layer_activation_bytes(j, 1, 2048, 8, true, Recompute::none) == Approx(sbh / t * (34 + 5 * a * s / h)));
  CHECK(layer_activation_bytes(j, 1, 2048, 8, false, Recompute::selective) == Approx(sbh * (10 + 24 / t)));
  CHECK(layer_activation_bytes(j, 1, 2048, 8, true, Recompute::selective) == Approx(sbh * 34 / t));
  CHECK(layer_activation_bytes(j, 1, 2048, 8, false, Recompute::full) == Approx(2 * sbh));
  CHECK(layer_activation_bytes(j, 1, 2048, 8, true, Recompute::full) == Approx(2 * sbh / t));
  // Linear in the micro-batch.
  CHECK(layer_activation_bytes(j, 4, 2048, 8, true, Recompute::none) ==
        Approx(4 * layer_activation_bytes(j, 1, 2048, 8, true, Recompute::none)));
}

TEST_CASE("flash attention and no dropout: 32 sbh plus the fp32 log-sum-exp", "[llm][memory]") {
  LlmJob j = gpt3_job();
  j.stack.dropout = false;
  j.stack.flash_attention = true;
  const double s = 2048, b = 2, h = 12288, a = 96;
  // 34 sbh less the two 1-byte dropout masks; no a s^2 b scores at all.
  CHECK(layer_activation_bytes(j, 2, 2048, 1, false, Recompute::none) == Approx(s * b * h * 32 + 4 * a * s * b));
  // SwiGLU keeps gate, up and their product: 3 x 2 s b f instead of GELU's 2 x 2 s b f.
  j.shape.mlp = LlmMlp::swiglu;
  const double f = 4 * h;
  CHECK(layer_activation_bytes(j, 2, 2048, 1, false, Recompute::none) ==
        Approx(s * b * h * 16 + 6 * s * b * f + 4 * a * s * b));
}

TEST_CASE("model state per device under ZeRO stages: 2 + 2 + 12 bytes per parameter", "[llm][memory]") {
  const LlmJob j = small_job();
  const double P = static_cast<double>(llm_parameter_count(j.shape));
  LlmConfig c;
  c.dp = 8;
  c.micro_batch = 1;
  LlmMemory m = llm_memory(j, c);
  CHECK(m.parameters_per_device == Approx(P));  // layers + embeddings + final norm = the exact count
  CHECK(m.weights + m.gradients + m.optimizer == Approx(16 * P));
  c.zero = ZeroStage::optimizer;
  m = llm_memory(j, c);
  CHECK(m.weights + m.gradients + m.optimizer == Approx(4 * P + 12 * P / 8));
  c.zero = ZeroStage::gradients;
  m = llm_memory(j, c);
  CHECK(m.weights + m.gradients + m.optimizer == Approx(2 * P + 14 * P / 8));
  c.zero = ZeroStage::parameters;
  m = llm_memory(j, c);
  CHECK(m.weights + m.gradients + m.optimizer == Approx(16 * P / 8));
  // Tensor parallelism divides the state; the first pipeline stage holds p micro-batches.
  LlmConfig p;
  p.pp = 4, p.dp = 1, p.micro_batch = 1;
  LlmJob big = j;
  big.global_batch = 16;
  const LlmMemory first = llm_memory(big, p);
  const double per_layer = layer_activation_bytes(big, 1, 2048, 1, false, Recompute::none);
  CHECK(first.activations == Approx(per_layer * 2 /* layers per stage */ * 4 /* in flight */ + 2.0 * 2048 * 1024));
  p.virtual_stages = 2;
  CHECK(llm_memory(big, p).activations ==
        Approx(per_layer * 2 * 4 * (1 + 3.0 / 8) + 2.0 * 2048 * 1024));
}

TEST_CASE("hierarchical collectives: NVLink ring inside a node, NIC ring between nodes", "[llm][collectives]") {
  const LlmNetwork n = net(100e9, 10e9);
  const double X = 1e9;
  CHECK(group_allreduce_s(X, 1, 1, n) == 0);
  CHECK(group_allreduce_s(X, 8, 8, n) == Approx(2 * 7.0 / 8 * X / 100e9));
  // 16 ranks, 8 per node: the node ring, then 2 nodes exchanging an eighth each over the NICs.
  CHECK(group_allreduce_s(X, 16, 8, n) == Approx(2 * 7.0 / 8 * X / 100e9 + 2 * 1.0 / 2 * (X / 8) / 10e9));
  // One rank per node (tp fills the node): the whole buffer over the NICs.
  CHECK(group_allreduce_s(X, 4, 1, n) == Approx(2 * 3.0 / 4 * X / 10e9));
  CHECK(group_allgather_s(X, 16, 8, n) == Approx(7.0 / 8 * X / 100e9 + 1.0 / 2 * (X / 8) / 10e9));
}

TEST_CASE("pipeline bubble (p - 1) / v micro-batch slots; recompute adds a forward", "[llm][time]") {
  LlmJob j = small_job();
  j.global_batch = 32;
  const FlatPricer k;
  const LlmNetwork n = net(100e9, 10e9);
  LlmConfig c;
  c.pp = 4, c.dp = 1, c.micro_batch = 1;
  const LlmLayerCost lc = llm_layer_cost(j, 1, 1, 1, false, k);
  const LlmTime t = llm_step_time(j, c, lc, k, n);
  const double layers = 2, m = 32;
  const double stage_avg = layers * (lc.fwd_s + lc.bwd_s) + (lc.head_fwd_s + lc.head_bwd_s) / 4;
  CHECK(t.bubble_s == Approx(3 * stage_avg));
  CHECK(t.compute_s == Approx(m * (layers * (lc.fwd_s + lc.bwd_s) + lc.head_fwd_s + lc.head_bwd_s)));
  c.virtual_stages = 2;
  CHECK(llm_step_time(j, c, lc, k, n).bubble_s == Approx(1.5 * stage_avg));
  c.virtual_stages = 1;
  c.recompute = Recompute::full;
  CHECK(llm_step_time(j, c, lc, k, n).compute_s ==
        Approx(m * (layers * (2 * lc.fwd_s + lc.bwd_s) + lc.head_fwd_s + lc.head_bwd_s)));
  // The forward GEMMs of one layer: 2 T (h (h + 2h) + h h + 2 h f) at 100 TFLOP/s.
  const double T = 2048, h = 1024, f = 4096;
  const double gemm = 2 * T * (h * 3 * h + h * h + 2 * h * f) / 100e12;
  const double core = 2 * (2 * T * T * 64 * 16) / 100e12;  // QK^T and PV, 16 heads of 64, materialized
  CHECK(lc.attn_fwd_s > core);                                // plus the softmax traffic
  CHECK(lc.fwd_s > gemm + core);
}

TEST_CASE("the cost of a configuration does not grow with the GPU count", "[llm][time]") {
  const LlmJob base = gpt3_job();
  const FlatPricer k;
  const LlmNetwork n = net(240e9, 23e9);
  LlmConfig c;
  c.tp = 8, c.pp = 16, c.micro_batch = 1, c.recompute = Recompute::full;
  c.dp = 2;
  LlmJob j = base;
  j.global_batch = 64;
  const LlmCandidate small = llm_evaluate(j, c, k, n);
  c.dp = 128;  // 16,384 GPUs, the same work per GPU
  j.global_batch = 64 * 64;
  const LlmCandidate big = llm_evaluate(j, c, k, n);
  CHECK(std::isfinite(big.time.step_s));
  // Per-GPU throughput within the data-parallel exchange's growth (hierarchical ring).
  CHECK(big.tokens_per_s / 16384 == Approx(small.tokens_per_s / 256).epsilon(0.05));
}

TEST_CASE("configuration checks name the field", "[llm][plan]") {
  const LlmJob j = small_job();  // 16 heads, 8 layers, global batch 64
  LlmConfig c;
  c.tp = 3;
  CHECK(llm_config_error(j, c).rfind("tp:", 0) == 0);
  c.tp = 1, c.pp = 9;  // more stages than the 8 layers
  CHECK(llm_config_error(j, c).rfind("pp:", 0) == 0);
  c.pp = 3;  // uneven stages (3, 3, 2 layers) run
  CHECK(llm_config_error(j, c).empty());
  c.pp = 4, c.virtual_stages = 3;  // 12 chunks for 8 layers
  CHECK(llm_config_error(j, c).rfind("pp_virtual_stages:", 0) == 0);
  c.virtual_stages = 1;
  c.pp = 1, c.dp = 3;
  CHECK(llm_config_error(j, c).rfind("global_batch:", 0) == 0);
  c.dp = 2, c.ep = 2;
  CHECK(llm_config_error(j, c).rfind("ep:", 0) == 0);
  c.ep = 1, c.sequence_parallel = true;
  CHECK(llm_config_error(j, c).rfind("sequence_parallel:", 0) == 0);
  c.sequence_parallel = false;
  CHECK(llm_config_error(j, c).empty());
}

TEST_CASE("uneven pipeline stages: the first stages hold the extra layers, the slowest stage sets the pace",
          "[llm][plan]") {
  LlmShape s;
  s.layers = 126;  // Llama 3 405B
  LlmConfig c;
  c.pp = 16;  // 126 = 16 x 7 + 14: stages 0-13 hold 8 layers, 14-15 hold 7
  CHECK(llm_stage_layers(s, c).first == 8);
  CHECK(llm_stage_layers(s, c).last == 7);
  c.virtual_stages = 4;  // 64 chunks: 62 of 2 layers, 2 of 1; stage 0 runs chunks 0, 16, 32, 48 (all 2),
  CHECK(llm_stage_layers(s, c).first == 8);  // stage 15 chunks 15, 31, 47 (2) and 63 (1)
  CHECK(llm_stage_layers(s, c).last == 7);
  s.layers = 96, c.pp = 8, c.virtual_stages = 1;  // even: 12 each
  CHECK(llm_stage_layers(s, c).first == 12);
  CHECK(llm_stage_layers(s, c).last == 12);
  c.pp = 1;
  CHECK(llm_stage_layers(s, c).first == 96);

  // The 8-layer job on 3 stages (3, 3, 2 layers) against 4 stages (2 each) and 2 (4 each), the
  // same micro-batches: the pace is max(3 layers, 2 layers + LM head) per micro-batch against
  // 2 layers + head and 4 layers + head, so it lies between them; the first stage holds 3
  // layers' weights.
  LlmJob j = small_job();
  const FlatPricer k;
  const LlmNetwork n = net(240e9, 23e9);
  LlmConfig u;
  u.dp = 1, u.micro_batch = 4;
  auto at = [&](int pp) {
    u.pp = pp;
    REQUIRE(llm_config_error(j, u).empty());
    return llm_evaluate(j, u, k, n);
  };
  const LlmCandidate two = at(2), three = at(3), four = at(4);
  CHECK(three.time.compute_s < two.time.compute_s);
  CHECK(three.time.compute_s >= four.time.compute_s);
  REQUIRE(three.memory.stage_layers == 3);  // the first stage is the fuller one
  CHECK(three.memory.parameters_per_device ==
        Approx(3 * llm_layer_parameters(j.shape) + llm_embedding_parameters(j.shape)));
}

TEST_CASE("the search ranks fitting configurations and counts the rejected ones", "[llm][plan]") {
  const LlmJob j = small_job();
  const FlatPricer k;
  LlmSearchOptions o;
  o.gpus = 16;
  o.memory_bytes = 4e9;
  const LlmSearchResult r = llm_search(j, o, k, net(240e9, 23e9));
  REQUIRE(!r.ranked.empty());
  for (size_t i = 1; i < r.ranked.size(); ++i) CHECK(r.ranked[i - 1].tokens_per_s >= r.ranked[i].tokens_per_s);
  for (const auto& c : r.ranked) {
    CHECK(c.memory.total() <= 4e9);
    CHECK(c.config.devices() == 16);
    CHECK(llm_config_error(j, c.config).empty());
  }
  bool memory = false;
  for (const auto& x : r.rejected) memory = memory || x.reason == "memory";
  CHECK(memory);  // 4 GB cannot hold every micro-batch without recompute
  CHECK(r.evaluated >= static_cast<long long>(r.ranked.size()));
}

TEST_CASE("cluster YAMLs: per-GPU NIC share and NVLink rate", "[llm][cluster]") {
  const ClusterSpec c = find_cluster("hgx_h100_ib3200");
  CHECK(c.devices_per_node() == 8);
  CHECK(c.max_devices() == 16384);
  const LlmNetwork n = llm_network(c, DevicePorts{50, 450});
  CHECK(n.inter.bytes_s == Approx(8 * 400e9 / 8 / 8 * c.inter_bus_efficiency));
  CHECK(n.intra.bytes_s == Approx(450e9 * c.intra_bus_efficiency));
  const ClusterSpec a = find_cluster("hgx_a100_roce1600");
  CHECK(a.network == NetworkKind::roce);
  CHECK(std::find(a.devices.begin(), a.devices.end(), "a100_sxm4_40gb") != a.devices.end());
  CHECK(std::find(a.devices.begin(), a.devices.end(), "a100_sxm4_80gb") != a.devices.end());
  CHECK_THROWS_AS(find_cluster("no_such_cluster"), FieldError);
}

// A GB200 NVL72 rack is the cluster's node: its 72 GPUs share one NVLink 5 domain, so tensor
// and expert parallelism reach 72 GPUs before a collective leaves NVLink; one 400 Gb/s NIC per
// GPU. A DGX B200 node has 8 GPUs at the same NVLink rate.
TEST_CASE("cluster YAMLs: a GB200 NVL72 rack is one 72-GPU NVLink node, a DGX B200 node 8", "[llm][cluster]") {
  const ClusterSpec r = find_cluster("gb200_nvl72_ib");
  CHECK(r.devices_per_node() == 72);
  const analytical::DeviceSpec g = analytical::load_device_spec("gb200");
  const LlmNetwork n = llm_network(r, DevicePorts{g.pcie_gbps, g.nvlink_gbps});
  CHECK(n.devices_per_node == 72);
  CHECK(n.intra.bytes_s == Approx(900e9 * r.intra_bus_efficiency));
  CHECK(n.inter.bytes_s == Approx(72 * 400e9 / 8 / 72 * r.inter_bus_efficiency));  // 50 GB/s per GPU
  const ClusterSpec b = find_cluster("dgx_b200_ib3200");
  CHECK(b.devices_per_node() == 8);
  const analytical::DeviceSpec d = analytical::load_device_spec("b200");
  const LlmNetwork nb = llm_network(b, DevicePorts{d.pcie_gbps, d.nvlink_gbps});
  CHECK(nb.intra.bytes_s == Approx(900e9 * b.intra_bus_efficiency));
  CHECK(nb.inter.bytes_s == Approx(8 * 400e9 / 8 / 8 * b.inter_bus_efficiency));
}

// A PCIe node of cards without peer-to-peer (GeForce Ampere/Ada): NCCL stages each hop through
// host memory, so the 8 GPUs share the host's staging bandwidth, as the analytical engine prices
// a single node (parallel/topology.hpp). server_pcie: 50 GB/s slots, staging_gbps 17.5.
TEST_CASE("llm_network: GPUs without PCIe peer-to-peer share the host's staging bandwidth", "[llm][cluster]") {
  ClusterSpec c = find_cluster("hgx_a100_roce1600");
  c.node = find_system("server_pcie");
  REQUIRE(c.node.host.staging_gbps == 17.5);
  REQUIRE(c.devices_per_node() == 8);
  // A Gen4 card (24 GB/s port) with peer-to-peer: the slot capped by the port.
  const LlmNetwork p2p = llm_network(c, DevicePorts{24, 0, true});
  CHECK(p2p.intra.bytes_s == Approx(24e9 * c.intra_bus_efficiency));
  // Without it: min(24, 17.5 / 8) = 2.1875 GB/s per GPU.
  const LlmNetwork staged = llm_network(c, DevicePorts{24, 0, false});
  CHECK(staged.intra.bytes_s == Approx(2.1875e9 * c.intra_bus_efficiency));
  // The network between nodes does not depend on it.
  CHECK(staged.inter.bytes_s == Approx(p2p.inter.bytes_s));
  // An NVSwitch node never stages: the flag changes nothing there.
  const ClusterSpec h = find_cluster("hgx_h100_ib3200");
  CHECK(llm_network(h, DevicePorts{50, 450, false}).intra.bytes_s == Approx(llm_network(h, DevicePorts{50, 450}).intra.bytes_s));
}

namespace {
// fp8 GEMMs at twice the 16-bit rate (H100: 1,979 vs 989 TFLOP/s dense).
class Fp8Pricer final : public LlmKernelPricer {
 public:
  Fp8Pricer() {
    memory_bytes_s = 1e12;
    peak_flops_s = 100e12;
  }
  double gemm_s(double m, double n, double k, double batch, bool fp8) const override {
    return 2 * m * n * k * batch / (fp8 ? 200e12 : 100e12);
  }
};
}  // namespace

TEST_CASE("fp8: the linear layers run at the fp8 rate, plus the casts of their inputs", "[llm][time]") {
  LlmJob j = small_job();
  const Fp8Pricer k;
  const LlmLayerCost bf16 = llm_layer_cost(j, 1, 1, 1, false, k);
  j.precision.fp8 = true;
  const LlmLayerCost fp8 = llm_layer_cost(j, 1, 1, 1, false, k);
  const double T = 2048, h = 1024, f = 4096;
  const double linear = 2 * T * (h * 3 * h + h * h + 2 * h * f);  // forward FLOPs of the four linear layers
  // Read 2 bytes, write fp8 and its transpose per element of the QKV, projection, up and down inputs.
  const double casts = 4.0 * (T * h + T * h + T * h + T * f) / 1e12;
  CHECK(bf16.fwd_s - fp8.fwd_s == Approx(linear / 100e12 - linear / 200e12 - casts));
  // Attention and the LM head stay in 16 bits.
  CHECK(fp8.attn_fwd_s == Approx(bf16.attn_fwd_s));
  CHECK(fp8.head_fwd_s == Approx(bf16.head_fwd_s));
}

namespace {
// A GEMM whose tiles are 128 wide and deep: a dimension under 128 fills part of a tile (the
// time of a full one), and the S x S output of an unfused QK^T is written at 1 TB/s.
class TiledPricer final : public LlmKernelPricer {
 public:
  TiledPricer() {
    memory_bytes_s = 1e12;
    peak_flops_s = 200e12;
  }
  double gemm_s(double m, double n, double k, double batch, bool) const override {
    const double math = 2 * m * std::max(n, 128.0) * std::max(k, 128.0) * batch / 100e12;
    return std::max(math, 2 * m * n * batch / memory_bytes_s);
  }
};
}  // namespace

TEST_CASE("fused attention runs its products at a large GEMM's rate, whatever the head width", "[llm][time]") {
  // The small decoder at head dim 64 (h 1024, 16 heads), sequence 2048, one sequence: QK^T and
  // PV are 2 x 2 x 2048 x 2048 x 64 x 16 FLOPs = 17.2 GFLOP, at 100 TFLOP/s 172 us, the whole
  // product (the masked half too; docs/parallel.md "Fused attention's rate").
  LlmJob j = small_job();
  j.stack.flash_attention = true;
  j.stack.dropout = false;
  const TiledPricer k;
  const double flops = 4.0 * 2048 * 2048 * 64 * 16;
  CHECK(llm_layer_cost(j, 1, 1, 1, false, k).attn_fwd_s == Approx(flops / 100e12));
  // Unfused, the same products are the batched GEMMs their shapes make: QK^T's 64-deep K fills
  // half a tile and PV's 64-wide N half, so twice the math, and QK^T writes its scores.
  j.stack.flash_attention = false;
  const double scores = 2048.0 * 2048 * 16;
  const double unfused = std::max(2 * flops / 2 / 100e12, 2 * scores / 1e12) + 2 * flops / 2 / 100e12;
  CHECK(llm_layer_cost(j, 1, 1, 1, false, k).attn_fwd_s == Approx(unfused + 2.0 * 2 * scores / 1e12));
  // A splash kernel that skips the causal mask's empty blocks does half the products.
  j.stack.flash_attention = true;
  j.stack.causal_block_skip = true;
  CHECK(llm_layer_cost(j, 1, 1, 1, false, k).attn_fwd_s == Approx(flops / 2 / 100e12));
}
