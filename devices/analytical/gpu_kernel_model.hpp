// The GPU kernel model (docs/gpu_model.md): a GEMM (and a convolution as an implicit GEMM) is
// cut into output tiles the way cuBLAS/cuDNN/CUTLASS heuristics do; the tiles run in waves over
// the SMs; each wave takes the longer of its math at the per-SM rate and its operand traffic
// through L2 and DRAM. The last, partly filled wave costs a whole one (wave quantization).
#pragma once

namespace xpusim::analytical {

// What the model needs of a device at one precision, efficiencies applied.
struct GpuKernelRates {
  double sm_count = 1;
  double math_flops_s = 1;        // the whole chip's achieved rate for this pipe (tensor or CUDA cores)
  double smem_bytes_per_sm = 96 * 1024.0;
  double registers_per_sm = 65536;
  double l2_bytes = 6e6;
  double l2_bytes_s = 3e12;
  double dram_bytes_s = 1e12;
  int pipeline_stages = 3;        // operand buffers in shared memory (cp.async multistage on Ampere+)
  // CTAs of a thread-block cluster that receive one operand panel from a single L2 read (TMA
  // multicast on Hopper, the two-SM MMA on Blackwell); 1 = every tile reads both its panels.
  double cluster_operand_sharing = 1;
};

struct GemmShape {
  double m = 1, n = 1, k = 1;     // C[m, n] += A[m, k] B[k, n]
  double batch = 1;               // independent GEMMs of that shape (heads, groups)
  double in_bytes = 2;            // bytes per operand element
  double out_bytes = 2;           // bytes per output element
  // Distinct data in an operand over its m*k (A) or k*n (B) elements: an implicit-GEMM
  // convolution's im2col operand repeats each input pixel once per filter tap (< 1 there).
  double a_unique = 1, b_unique = 1;
};

struct KernelTime {
  double math_s = 0;              // waves x per-tile math time
  double memory_s = 0;            // the slower of L2 and DRAM traffic
  double l2_s = 0, dram_s = 0;
  double tile_m = 0, tile_n = 0;  // the chosen threadblock tile
  double split_k = 1;             // K slices (small output, long K: weight gradients)
  double tiles = 0;               // CTAs launched
  double waves = 0;               // ceil(tiles / concurrent CTAs)
  double ctas_per_sm = 1;
  // Useful work over the work the waves and tiles pay for (1 = every slot of every wave busy
  // on real outputs): the wave and tile quantization together.
  double efficiency = 1;
  double time_s() const { return math_s > memory_s ? math_s : memory_s; }
};

// The tile the library heuristics would pick (the one with the least modelled time among the
// usual CUTLASS threadblock shapes) and its time.
KernelTime gemm_kernel_time(const GemmShape& g, const GpuKernelRates& r);
// The same for one given tile (tests; the heuristic evaluates every candidate with it).
KernelTime gemm_kernel_time_tile(const GemmShape& g, const GpuKernelRates& r, double tile_m, double tile_n);

}  // namespace xpusim::analytical
