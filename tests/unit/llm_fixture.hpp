// What the large-model layer's unit tests price with: every GEMM at 100 TFLOP/s (fp8 GEMMs at
// `fp8_flops_s`), memory at 1 TB/s, no launch cost, a 200 TFLOP/s peak for MFU; and a network of
// 8 devices per node with given intra- and inter-node bandwidths and no latency (times by hand);
// and the small decoder the search tests plan.
#pragma once

#include "parallel/llm_time.hpp"

namespace xpusim::parallel::test {

class FlatPricer final : public LlmKernelPricer {
 public:
  explicit FlatPricer(double fp8_flops_s = 100e12) : fp8_flops_s_(fp8_flops_s) {
    memory_bytes_s = 1e12;
    launch_s = 0;
    peak_flops_s = 200e12;
  }
  double gemm_s(double m, double n, double k, double batch, bool fp8) const override {
    return 2 * m * n * k * batch / (fp8 ? fp8_flops_s_ : 100e12);
  }

 private:
  double fp8_flops_s_;
};

// A small dense decoder for the search, the model-state sums and the fp8 casts: 8 layers,
// h 1024, 16 heads, GELU MLP 4096, sequence 2048, global batch 64.
inline LlmJob small_job() {
  LlmJob j;
  LlmShape& s = j.shape;
  s.layers = 8, s.hidden = 1024, s.heads = 16, s.kv_heads = 16, s.ffn_hidden = 4096, s.vocab = 32000;
  s.max_positions = 2048;
  j.seq_len = 2048;
  j.global_batch = 64;
  return j;
}

inline LlmNetwork net(double intra, double inter) {
  LlmNetwork n;
  n.devices_per_node = 8;
  n.intra = Link{intra, 0};
  n.inter = Link{inter, 0};
  return n;
}

}  // namespace xpusim::parallel::test
