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
// The most K slices a split-K kernel is priced with (a fixed bound keeps the pick monotone).
constexpr double kMaxSplit = 64;
}  // namespace

namespace {

// One tile shape with `split` K slices. A slice shorter than the minimum (8 K-steps) is padded
// to it with zeros (a library would not split that finely): so for a fixed split the time
// never falls as M, N, K or the batch grow.
KernelTime price_split(const GemmShape& g, const GpuKernelRates& r, double tm, double tn, double ctas_per_sm,
                       double split) {
  KernelTime t;
  t.tile_m = tm;
  t.tile_n = tn;
  t.ctas_per_sm = ctas_per_sm;
  const double m = std::max(1.0, g.m), n = std::max(1.0, g.n), k = std::max(1.0, g.k), batch = std::max(1.0, g.batch);
  const double sms = std::max(1.0, r.sm_count);
  const double slots = sms * t.ctas_per_sm;
  const double out_tiles = std::ceil(m / tm) * std::ceil(n / tn) * batch;
  t.split_k = split;
  const double k_slice = split > 1 ? std::max(std::ceil(k / split), 8.0 * tile_k(g.in_bytes)) : k;
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
  // A cluster of `share` CTAs reads the larger of a tile's two panels once for all of them
  // (cuBLAS on Hopper runs 2x1 clusters: nvjet_sm90_..._128x256_..._2x1_..., traced on an
  // H100, validation/measured/h100-monitor-2026-11-27.jsonl). Partners are the tiles of one
  // GEMM and K slice that need the same panel: along M for a B panel, along N for an A panel
  // (split-K slices and batched GEMMs read disjoint panels). Fewer such tiles than a cluster
  // share among themselves only (a lone tile has no partner), which keeps the traffic growing
  // with the tile count: t x (small + large / t) rises with t.
  const double row_tiles = std::ceil(m / tm), col_tiles = std::ceil(n / tn);
  const double partners = tm > tn ? col_tiles : tn > tm ? row_tiles : std::max(row_tiles, col_tiles);
  const double share = std::clamp(partners, 1.0, std::max(1.0, r.cluster_operand_sharing));
  const double panel_rows = tm + tn - std::max(tm, tn) * (1.0 - 1.0 / share);
  const double l2_traffic = t.tiles * panel_rows * k_slice * g.in_bytes + c_bytes;
  double dram_in = a_bytes + b_bytes;
  if (t.split_k == 1 && a_bytes + b_bytes > 0.5 * r.l2_bytes) {
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

}  // namespace

KernelTime gemm_kernel_time_tile(const GemmShape& g, const GpuKernelRates& r, double tm, double tn) {
  const double m = std::max(1.0, g.m), n = std::max(1.0, g.n), batch = std::max(1.0, g.batch);
  // Concurrent CTAs per SM: shared memory for `stages` operand slices, registers for the fp32
  // accumulators (one per output element) plus about half as many for operand fragments.
  const double smem_per_cta = (tm + tn) * tile_k(g.in_bytes) * g.in_bytes * r.pipeline_stages;
  const double by_smem = std::floor(r.smem_bytes_per_sm / smem_per_cta);
  const double by_regs = std::floor(r.registers_per_sm / (1.5 * tm * tn));
  const double ctas = std::clamp(std::min(by_smem, by_regs), 1.0, 4.0);
  const double slots = std::max(1.0, r.sm_count) * ctas;
  const double out_tiles = std::ceil(m / tm) * std::ceil(n / tn) * batch;
  // Split-K (cuBLAS/cuDNN for long-K, small-output products such as weight gradients): while
  // the output tiles leave slots of the first wave empty, K may be cut into up to
  // slots / tiles slices; the library's pick is the split with the least time (fewest slices
  // on ties). The candidates shrink as the output grows and each one's time grows with M, N,
  // K and the batch, so the least of them does too: the heuristic is monotone (issue 29).
  const double most = std::min(std::floor(slots / out_tiles), kMaxSplit);
  KernelTime best = price_split(g, r, tm, tn, ctas, 1);
  for (double s = 2; s <= most; ++s) {
    KernelTime t = price_split(g, r, tm, tn, ctas, s);
    if (t.time_s() < best.time_s()) best = t;
  }
  return best;
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
  // Every candidate tile's time grows with M, N, K and the batch (gemm_kernel_time_tile), so
  // the least of them does too: a weight gradient at batch 2 can no longer beat batch 1.
  return best_tile(g, r);
}

}  // namespace xpusim::analytical
