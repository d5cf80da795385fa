// Batch norm fused with its ReLU (and a residual add feeding that ReLU) under mixed precision:
// TensorFlow's grappler remapper rewrites FusedBatchNorm [+ Add] + Relu on 16-bit NHWC data
// into one _FusedBatchNormEx (cuDNN's CUDNN_BATCHNORM_OPS_BN_ACTIVATION and _BN_ADD_ACTIVATION,
// cuDNN >= 7.4.2), and its gradient takes the ReLU's derivative inside the BN backward kernel;
// XLA fuses the same chain. The graph counts those as separate ops; a stack with the fusion
// (FrameworkSpec::fused_bn_activation_half) pays for them as below.
#pragma once
#include "devices/analytical/op_cost.hpp"

namespace xpusim::analytical {

// What the fused kernel does with one op of the graph.
enum class BnFusionRole {
  none,        // priced as counted
  absorbed,    // a ReLU after a BN (or after an add of a BN's output): the BN kernel writes its output
  side_input,  // an add of a BN's output and a shortcut that feeds a ReLU: the BN kernel reads the shortcut
  grad_absorbed,           // the gradient of an absorbed ReLU: the BN backward kernel reads y besides dy
  grad_absorbed_residual,  // the same after a residual add: it also writes the shortcut's gradient
};

// The op's role; none unless the graph runs in mixed precision (fp16 or bf16).
BnFusionRole bn_fusion_role(const OpGraph& g, int op);

// Re-prices `c` for the op's role: absorbed ops cost nothing; the others no launch of their own
// and the bytes the fused kernel moves for them (a side input's read; y's read and, after a
// residual add, the shortcut gradient's write) at the model's streaming bandwidth.
void apply_bn_fusion(const OpGraph& g, int op, const OpCostModel& model, OpCost& c);

}  // namespace xpusim::analytical
