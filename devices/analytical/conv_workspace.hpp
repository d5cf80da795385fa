// cuDNN algorithm choice under a framework's workspace cap (kernel-model GPUs): MXNet 1.x
// autotunes each convolution only among algorithms whose scratch memory fits its Convolution
// `workspace` (1024 MB by default, MXNET_CUDNN_AUTOTUNE_DEFAULT=1 "limited_workspace"), where
// TensorFlow 1.x's autotuner (the architecture constants' stack) allows 4 GB. Large-image
// layers at large batches (VGG16's 224-56 px layers at batch 128) then lose the fast
// algorithms; small images (CIFAR-10) keep them.
#pragma once
#include "devices/analytical/op_cost.hpp"

namespace xpusim::analytical {

// Scratch bytes the fast algorithm of one convolution op needs: for a 3x3 or 5x5 stride-1,
// undilated, ungrouped convolution (cuDNN's Winograd-nonfused / FFT-tiling family), the
// transformed tiles of its activation input and output, 2.25x each (F(4x4, 3x3): a 6x6 tile
// per 4x4 outputs, 36/16: winograd.hpp's kWinogradNonfused3x3, which op_cost.cpp prices too), in
// the activation dtype. Backward ops take their forward's geometry (the data gradient
// transforms dy and dx, the weight gradient x and dy: the same sizes). 0 for every other op.
double conv_fast_workspace_bytes(const OpGraph& g, int op);

// Divides a convolution's math time by the capped efficiency when its fast algorithm needs
// more than the cap (Rates::conv_workspace_limit_bytes > 0, kernel model only).
void apply_conv_workspace_cap(const OpGraph& g, int op, const Rates& r, OpCost& c);

}  // namespace xpusim::analytical
