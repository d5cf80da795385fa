// What the large-model layer's unit tests price with: every GEMM at 100 TFLOP/s (fp8 GEMMs at
// `fp8_flops_s`), memory at 1 TB/s, no launch cost, a 200 TFLOP/s peak for MFU; and a network of
// 8 devices per node with given intra- and inter-node bandwidths and no latency. Times by hand.
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

inline LlmNetwork net(double intra, double inter) {
  LlmNetwork n;
  n.devices_per_node = 8;
  n.intra = Link{intra, 0};
  n.inter = Link{inter, 0};
  return n;
}

}  // namespace xpusim::parallel::test
