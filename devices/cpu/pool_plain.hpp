// 2-D max/average pooling on plain NCHW buffers, parallel over the N*C planes. oneDNN 2.6
// has JIT pooling only for channel-blocked layouts; on nchw it runs a generic kernel, and
// reordering around the JIT one costs more than the pooling itself (MNIST-CNN's 2x2 pool:
// 56 ms generic, 15 ms JIT + reorders, see docs/DEVELOPING.md). These loops read each input
// once and keep the graph's tensors plain.
#pragma once
#include <cstdint>

namespace xpusim::cpu {

struct PlainPool {
  int64_t planes = 0;          // N * C
  int64_t h = 0, w = 0;        // input
  int64_t oh = 0, ow = 0;      // output
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
  bool max = true;             // false: average counting padded zeros (PyTorch's default)
};

void pool_plain_forward(const PlainPool& p, const float* x, float* y);
// Max: the gradient goes to the first window element equal to the output (the argmax the
// forward pass took); average: spread evenly over the window (x and y unused, may be null).
// dx is overwritten.
void pool_plain_backward(const PlainPool& p, const float* dy, const float* x, const float* y, float* dx);

}  // namespace xpusim::cpu
