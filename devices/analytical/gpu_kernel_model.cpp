// Tile and wave pricing of GEMM-like kernels (docs/gpu_model.md has the derivation and sources).
#include "devices/analytical/gpu_kernel_model.hpp"

#include <algorithm>
#include <cmath>

namespace xpusim::analytical {

namespace {
// CUTLASS's default threadblock shapes for tensor-core GEMMs (cutlass/gemm/device/
// default_gemm_configuration.h and the cuBLAS kernels' names: 256x128, 128x256, 128x128,
// 128x64, 64x128, 64x64).
constexpr double kTiles[][2] = {{256, 128}, {128, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}};
// The K-slice a stage of shared memory holds: 32 elements of 16-bit operands, 16 of 32-bit
// (the same 64 bytes per row).
double tile_k(double in_bytes) { return 64.0 / in_bytes; }
}  // namespace

KernelTime gemm_kernel_time_tile(const GemmShape& g, const GpuKernelRates& r, double tm, double tn) {
  KernelTime t;
  t.tile_m = tm;
  t.tile_n = tn;
  const double m = std::max(1.0, g.m), n = std::max(1.0, g.n), k = std::max(1.0, g.k), batch = std::max(1.0, g.batch);
  const double sms = std::max(1.0, r.sm_count);
  // Concurrent CTAs per SM: shared memory for `stages` operand slices, registers for the fp32
  // accumulators (one per output element) plus about half as many for operand fragments.
  const double smem_per_cta = (tm + tn) * tile_k(g.in_bytes) * g.in_bytes * r.pipeline_stages;
  const double by_smem = std::floor(r.smem_bytes_per_sm / smem_per_cta);
  const double by_regs = std::floor(r.registers_per_sm / (1.5 * tm * tn));
  t.ctas_per_sm = std::clamp(std::min(by_smem, by_regs), 1.0, 4.0);
  const double slots = sms * t.ctas_per_sm;
  const double out_tiles = std::ceil(m / tm) * std::ceil(n / tn) * batch;
  // Split-K (cuBLAS/cuDNN for long-K, small-output products such as weight gradients): slice
  // K until the slots are filled, keeping each slice at least 8 K-steps long.
  const double max_split = std::max(1.0, std::floor(k / (8.0 * tile_k(g.in_bytes))));
  t.split_k = std::clamp(std::floor(slots / out_tiles), 1.0, max_split);
  const double k_slice = std::ceil(k / t.split_k);
  t.tiles = out_tiles * t.split_k;
  t.waves = std::ceil(t.tiles / slots);
  // Math: the CTAs resident on an SM share its pipes; every wave lasts as long as a full one.
  const double per_sm_rate = r.math_flops_s / sms;
  const double tile_flops = 2.0 * tm * tn * k_slice;
  t.math_s = t.waves * tile_flops * t.ctas_per_sm / per_sm_rate;
  // No schedule beats the chip: the useful multiply-adds at the whole chip's rate bound the
  // math time from below (split-K and the CTA count must not price a product above the peak:
  // alexnet's weight gradients on a Titan RTX came out at 27 TFLOP/s on a 16.3 TFLOP/s card).
  t.math_s = std::max(t.math_s, 2.0 * m * n * k * batch / r.math_flops_s);
  t.efficiency = (2.0 * m * n * k * batch) / (t.waves * slots * tile_flops);
  // Traffic: every tile reads its A and B panels through L2. DRAM sees the panels a wave's
  // CTAs read (a wave covers about a square block of tiles that share rows of A and columns
  // of B), once per wave, unless both operands fit in half the L2 and are read once. K slices
  // of a split-K kernel read disjoint panels: each operand once. Outputs are written once.
  const double a_bytes = m * k * g.in_bytes * batch * g.a_unique, b_bytes = k * n * g.in_bytes * batch * g.b_unique;
  // Split-K slices write fp32 partials that a reduction reads back.
  const double c_bytes = m * n * batch * (g.out_bytes + (t.split_k > 1 ? 2.0 * 4.0 * t.split_k : 0.0));
  const double l2_traffic = t.tiles * (tm + tn) * k_slice * g.in_bytes + c_bytes;
  double dram_in = a_bytes + b_bytes;
  if (t.split_k == 1 && a_bytes + b_bytes > 0.5 * r.l2_bytes) {
    const double row_tiles = std::ceil(m / tm), col_tiles = std::ceil(n / tn);
    const double per_wave = std::min(slots, t.tiles);
    const double cols = std::min(col_tiles, std::ceil(std::sqrt(per_wave)));
    const double rows = std::min(row_tiles, std::ceil(per_wave / cols));
    const double wave_panels = (rows * tm * g.a_unique + cols * tn * g.b_unique) * k * g.in_bytes;
    dram_in = std::max(dram_in, t.waves * wave_panels);
  }
  const double dram_traffic = dram_in + c_bytes;
  t.l2_s = l2_traffic / r.l2_bytes_s;
  t.dram_s = dram_traffic / r.dram_bytes_s;
  t.memory_s = std::max(t.l2_s, t.dram_s);
  return t;
}

namespace {
KernelTime best_tile(const GemmShape& g, const GpuKernelRates& r) {
  KernelTime best;
  bool first = true;
  for (const auto& tile : kTiles) {
    KernelTime t = gemm_kernel_time_tile(g, r, tile[0], tile[1]);
    // Strictly better only: ties keep the larger tile listed first (deterministic).
    if (first || t.time_s() < best.time_s()) best = t, first = false;
  }
  return best;
}
}  // namespace

KernelTime gemm_kernel_time(const GemmShape& g, const GpuKernelRates& r) {
  KernelTime best = best_tile(g, r);
  // A product can always run as a longer one with zero-padded K. Split-K's slice floor
  // (8 K-steps) lets a longer K use more slices and finish sooner (a weight gradient at batch
  // 2 beat batch 1: cifar10_cnn on an A100), so the next two K lengths that allow one more
  // slice are priced too, and the least time is the kernel's: time never falls as K grows.
  const double step = 8.0 * tile_k(g.in_bytes);
  GemmShape p = g;
  for (int more = 1; more <= 2; ++more) {
    p.k = (std::floor(std::max(1.0, g.k) / step) + more) * step;
    KernelTime t = best_tile(p, r);
    if (t.time_s() < best.time_s()) best = t;
  }
  return best;
}

}  // namespace xpusim::analytical
