// Training-mode batch normalisation in fp32 with optional fused residual add and ReLU:
// forward y = relu(gamma (x - mean) / sqrt(var + eps) + beta + r), backward from the
// gradient of y (masked by y > 0 when ReLU was fused). Used instead of oneDNN's batch norm
// for fp32 because oneDNN 2.6's JIT batch norm synchronises its threads with spinning
// barriers between the statistics and the normalisation passes: when another process
// preempts one thread, the other spins for the rest of its time slice. On the shared
// 2-core development machine (load ~7) oneDNN's batch norm took 28 of the 69 s of primitive
// time in a 2-thread ResNet-50 batch-8 step, against 0.9 s on one thread. Here every thread owns whole
// channels (the statistics of a channel need no other thread), so there is no barrier but
// the end of the parallel loop, and channels are handed out dynamically so that a running
// thread takes the work of a preempted one.
#pragma once
#include <cmath>
#include <cstdint>

namespace xpusim::cpu {

// Element (n, c, s) of a [N, C, S] tensor stored channel-blocked by `block` channels
// (aBcd8b / aBcd16b for block 8 / 16; block 1 is plain nchw) is at
// ((n * C/block + c/block) * S + s) * block + c % block. C must be a multiple of block.
struct BnShape {
  int64_t n = 1, c = 1, s = 1;
  int block = 1;  // 1, 8 or 16
};

// mean and var receive the batch mean and the biased batch variance (what the graph's
// saved statistics hold and what PyTorch normalises with). residual may be null. No
// output may alias an input (the executor's memory plan never lets them).
void bn_forward(const BnShape& sh, float eps, const float* x, const float* gamma, const float* beta,
                const float* residual, bool relu, float* y, float* mean, float* var);

// dy: gradient of the output; relu_y: the fused ReLU's output (null when no ReLU was
// fused), whose sign masks dy. Writes dx, dgamma, dbeta.
void bn_backward(const BnShape& sh, float eps, const float* dy, const float* relu_y, const float* x,
                 const float* gamma, const float* mean, const float* var, float* dx, float* dgamma, float* dbeta);

// The per-channel backward terms shared by the fp32 and bf16 kernels, from sg = sum(g) and
// sgx = sum(g (x - mean)) over the channel's m elements: dx = k1 g + k2 (x - mean) + k3
// (dx = gamma istd (g - sum(g)/m - xhat sum(g xhat)/m), xhat = (x - mean) istd).
// The forward pass's per-channel statistics of one group of B channels starting at channel
// c0 (sq: the sums of squared deviations over m values), stored as the batch mean and
// variance, and folded with gamma and beta into y = k x + b.
template <int B>
void bn_forward_fold(int64_t c0, const double (&sq)[B], const float (&mu)[B], double m, const float* gamma,
                     const float* beta, float eps, float* mean, float* var, float (&k)[B], float (&b)[B]) {
  for (int j = 0; j < B; ++j) {
    const int64_t c = c0 + j;
    const float v = static_cast<float>(sq[j] / m);
    mean[c] = mu[j];
    var[c] = v;
    k[j] = gamma[c] / std::sqrt(v + eps);
    b[j] = beta[c] - mu[j] * k[j];
  }
}

struct BnBackwardTerms {
  float k1, k2, k3;
  float dgamma, dbeta;
};
inline BnBackwardTerms bn_backward_terms(double sg, double sgx, float gamma, float var, float eps, double m) {
  const double istd = 1.0 / std::sqrt(static_cast<double>(var) + eps);
  return {static_cast<float>(gamma * istd), static_cast<float>(-gamma * istd * istd * istd * sgx / m),
          static_cast<float>(-gamma * istd * sg / m), static_cast<float>(sgx * istd), static_cast<float>(sg)};
}

}  // namespace xpusim::cpu
