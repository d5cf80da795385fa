// A kernel-model GPU for unit tests that price single ops by hand: the few rates a test sets,
// the register file every architecture since Kepler has (64 Ki 32-bit registers per SM), and an
// L2 fast enough never to bind (so L2 traffic drops out of the hand-derived numbers).
#pragma once

#include "devices/analytical/op_cost.hpp"

namespace xpusim::analytical::test {

struct KernelGpu {
  double tensor_flops_s = 0;    // FLOP/s; 0 = no tensor cores at the precision
  double gemm_flops_s = 0;      // FLOP/s of the CUDA cores
  double memory_bytes_s = 0;    // DRAM, B/s
  double op_overhead_s = 0;     // launch cost per kernel, s
  double sm_count = 0;
  double smem_kib_per_sm = 0;   // KiB
  int pipeline_stages = 0;      // operand buffers in shared memory
  double l2_bytes = 0;
};

inline Rates kernel_model_rates(const KernelGpu& k) {
  Rates r;
  r.kernel_model = true;
  r.tensor_flops_s = k.tensor_flops_s;
  r.gemm_flops_s = k.gemm_flops_s;
  r.memory_bytes_s = k.memory_bytes_s;
  r.op_overhead_s = k.op_overhead_s;
  r.kernel.sm_count = k.sm_count;
  r.kernel.smem_bytes_per_sm = k.smem_kib_per_sm * 1024.0;
  r.kernel.registers_per_sm = 65536;
  r.kernel.pipeline_stages = k.pipeline_stages;
  r.kernel.l2_bytes = k.l2_bytes;
  r.kernel.l2_bytes_s = 1e18;
  return r;
}

}  // namespace xpusim::analytical::test
