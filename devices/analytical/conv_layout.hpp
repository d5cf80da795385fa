// NCHW activations under tensor-core convolutions: the layout transposes a stack pays when its
// framework keeps images in NCHW (PyTorch before 1.5 has no channels-last memory format) while
// cuDNN's tensor-core convolution kernels work on NHWC (cuDNN Developer Guide, "Tensor Core
// operations": NCHW fp16 data is transposed to NHWC and back around the kernel).
#pragma once
#include "devices/analytical/op_cost.hpp"

namespace xpusim::analytical {

// Bytes the layout transposes of one convolution op move: its activation input and output
// (forward: x and y; data gradient: dy and dx; weight gradient: x and dy, the same sizes), each
// read once and written once in the activation dtype. The filter's transpose is left out (its
// bytes are under 1% of ResNet-50's activations at batch 32 and up). 0 for a convolution that
// runs on CUDA cores (under 8 input channels or no tensor cores at the precision: NCHW kernels
// exist there) and for every other op.
double nchw_transpose_bytes(const OpGraph& g, int op, const Rates& r);

// Adds the transposes to a convolution's cost: two more kernels (one each way) that run
// between the convolution and its neighbours, so their launches and streaming time add to
// the op's time (in overhead_s: not hidden under the convolution's math).
void add_nchw_transposes(const OpGraph& g, int op, const Rates& r, const OpCostModel& model, OpCost& c);

}  // namespace xpusim::analytical
