// Lowering of a per-core training-step graph (models/graph.hpp) to the TPU program
// (program.hpp): XLA-style fusion of element-wise ops into their producer, convolutions as
// implicit GEMMs tiled to the MXU, every fused op split into VMEM-sized chunks whose DMA is
// double-buffered against compute, gradient all-reduce on ICI, the input batch on infeed.
#pragma once
#include "models/dtype.hpp"
#include "models/graph.hpp"
#include "models/work.hpp"
#include "sim/tpu/program.hpp"
#include "sim/tpu/tpu_spec.hpp"

namespace xpusim::tpu {

struct LoweringOptions {
  bool real_data = false;   // the Input op waits for the host infeed queue
  // 16-bit tensors live in HBM as fp32 (FrameworkSpec::tpu_fp32_storage): every HBM and ICI
  // byte of them doubles; the MXU's rate is unchanged (it rounds fp32 inputs to bf16).
  bool fp32_storage = false;
};

// Peak HBM of the step's tensors (work.cpp's graph_totals) as stored: with fp32_storage and a
// 16-bit precision, the live (non-persistent) tensors, 16-bit activations and their gradients,
// take 4 bytes an element, and there is no 16-bit copy of the weights.
int64_t stored_peak_bytes(const GraphTotals& t, Precision precision, bool fp32_storage);

Program lower_step(const OpGraph& g, const TpuSpec& spec, const LoweringOptions& o);

}  // namespace xpusim::tpu
