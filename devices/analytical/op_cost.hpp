// Per-op time of the analytical engine: an OpVisitor over every op kind (a new kind fails to
// compile here until it is handled) that turns the op's counted Work into seconds with a
// roofline, max(FLOPs / compute rate, bytes / memory rate), plus a per-kernel overhead.
// Conv/GEMM ops use tensor cores when the precision and channel counts allow, Winograd for
// 3x3 stride-1 convolutions otherwise, and a fill factor for kernels too small to occupy
// every SM. All-reduces are priced on the cluster topology by parallel/collectives.hpp.
#pragma once
#include <string>
#include <vector>

#include "devices/analytical/cpu_threads.hpp"
#include "devices/analytical/gpu_kernel_model.hpp"
#include "engine/op_visitor.hpp"

namespace xpusim::analytical {

// Effective rates for one request (device x precision x build x vCPUs), efficiencies applied.
struct Rates {
  double gemm_flops_s = 1;     // conv/GEMM on CUDA cores or SIMD units
  double tensor_flops_s = 0;   // conv/GEMM on tensor cores; 0 = not used at this precision
  double vector_flops_s = 1;   // elementwise arithmetic
  double memory_bytes_s = 1;   // streaming bandwidth
  double llc_bytes = 0;        // ops moving at most this many bytes stream from the cache (0 = none)
  double llc_bytes_s = 0;      // last-level cache bandwidth
  double op_overhead_s = 0;    // per kernel
  double recurrent_step_s = 0; // per timestep kernel of an LSTM
  double transcendental_flops = 4;  // FLOP slots one exp/tanh/sigmoid costs on the vector units
  double winograd_speedup = 1; // 3x3 stride-1 convs off tensor cores
  double fill_items = 0;       // outputs needed to occupy the device; 0 = no fill model (CPU)
  double gemm_half_dim = 0;    // GEMM dimension at which tiles run half full; 0 = no shape model
  double gemm_tile_n = 0;      // output-channel tile width (channels round up to it); 0 = no quantisation
  bool exchange_in_compute_precision = true;  // mixed precision: gradients all-reduced in 16 bits (framework)
  // Matmuls and attention GEMMs may use tensor_flops_s. False where an fp32 run's stack sends
  // only its convolutions to the TF32 tensor cores (framework fp32_math: tf32_convs, PyTorch
  // >= 1.12's defaults): its cuBLAS matmuls then run strict fp32 at gemm_flops_s.
  bool matmul_tensor_cores = true;
  // fp32/TF32 runs of a stack whose Adam is a loop of unfused tensor ops (framework
  // fp32_unfused_update_kernels / _accesses): kernels and fp32 accesses per parameter element.
  int unfused_update_kernels = 0;
  int unfused_update_accesses = 0;
  // Kernel model: the first convolution's input channels as the stack's input pipeline pads
  // them (mixed precision, framework first_layer_input_channels_padded_to); 0 = unpadded.
  int first_layer_channels_padded_to = 0;
  // GPUs: the stack's padding of GEMM feature dimensions (FrameworkSpec::gemm_dims_padded_to,
  // elements; 0 = none), for the tensor cores' 16-byte alignment rule (gemm_alignment.hpp).
  int gemm_dims_padded_to = 0;
  // The GPU kernel model (docs/gpu_model.md): GEMMs, convolutions and attention priced from
  // tiles and waves instead of the fill/shape/quantisation factors above. Its math rates are
  // tensor_flops_s / gemm_flops_s and its DRAM rate memory_bytes_s; the rest is set here.
  bool kernel_model = false;
  GpuKernelRates kernel;
  // CPUs with a thread-pool model (thread_grain_cycles > 0): each op re-priced on the threads
  // Eigen gives it (cpu_threads.hpp); cpu.vcpus == 0 otherwise.
  CpuThreading cpu;
  // Kernel model: the framework's cuDNN workspace cap (FrameworkSpec::conv_workspace_limit_mb,
  // in bytes; 0 = none) and the speed of a capped convolution (conv_workspace.hpp).
  double conv_workspace_limit_bytes = 0;
  double conv_capped_efficiency = 1.0;
  // Kernel model: sustained / boost SM clock of tensor-core kernels under the board's power
  // limit (power_clock.hpp); tensor_flops_s and kernel.l2_bytes_s already include it.
  double tensor_clock_factor = 1.0;
};

enum class OpClass { none, conv, gemm, recurrent, elementwise, normalization, update, communication };
const char* op_class_name(OpClass c);

struct OpCost {
  OpClass cls = OpClass::none;
  double compute_s = 0;        // FLOPs at the effective rate
  double memory_s = 0;         // bytes at the effective bandwidth
  double overhead_s = 0;       // launches + dispatch
  double comm_bytes = 0;       // communication ops: bytes to all-reduce
  double flops_saved = 0;      // of the op's counted FLOPs, skipped by a fast algorithm (Winograd / FFT)
  // Kernel model only (GEMM-like ops; 0 otherwise): the largest kernel's tile, the waves of
  // all its kernels, and useful work over what the waves and tiles pay for.
  double math_s = 0, tile_m = 0, tile_n = 0, waves = 0, wave_efficiency = 0;
  // GPUs: a tensor-core GEMM whose operands break 16-byte alignment, priced on the library's
  // unaligned kernels (gemm_alignment.hpp).
  bool unaligned = false;
  double time_s() const { return (compute_s > memory_s ? compute_s : memory_s) + overhead_s; }
};

class OpCostModel final : public OpVisitor<OpCost> {
 public:
  explicit OpCostModel(const Rates& r) : r_(r) {}

#define XPUSIM_ANALYTICAL_DECL(k, n) OpCost on_##k(const OpGraph& g, int op) override;
  XPUSIM_OP_KINDS(XPUSIM_ANALYTICAL_DECL)
#undef XPUSIM_ANALYTICAL_DECL

  // Seconds to stream `bytes` through DRAM (or the last-level cache when they fit in it).
  double memory_seconds(double bytes) const;

 private:
  OpCost conv(const OpGraph& g, int op) const;
  // dmin: the smallest of the implicit GEMM's M, N, K (tile utilisation); n_out: the GEMM's
  // output-column count (channels), which is tiled in gemm_tile_n-wide blocks.
  // CPUs with the thread-pool model: re-priced on the threads Eigen gives the op unless
  // `per_step` (an LSTM prices its timesteps itself).
  OpCost gemm(const OpGraph& g, int op, double flops, double items, double dmin, double n_out, bool tensor_ok,
              double kernels, bool per_step = false) const;
  OpCost streaming(const OpGraph& g, int op, OpClass cls, double kernels = 1) const;
  // Attention written out as batched GEMMs plus a softmax pass: `gemms` products of
  // [Tq, dh] x [dh, Tk] shape per head, `per_score` vector FLOPs per score, `kernels` launches.
  OpCost attention(const OpGraph& g, int op, double gemms, double per_score, double kernels) const;
  // Kernel model: `gemms` GEMM kernels summed into one op cost, tensor cores where `tensor_ok`
  // and the precision has them; `math_scale` divides the math time (Winograd off tensor cores).
  OpCost kernel_gemms(const OpGraph& g, const std::vector<GemmShape>& gemms, bool tensor_ok, double kernels,
                      double math_scale = 1.0) const;
  // A 3x3 stride-1 convolution off the tensor cores as cuDNN's Winograd algorithms would run it
  // (the faster of WINOGRAD_NONFUSED with its transform traffic and, where `fused_ok`, the
  // fused F(2x2, 3x3) kernel); `act_elems` = the input's plus the output's elements.
  OpCost cuda_core_winograd_3x3(const OpGraph& g, const GemmShape& s, bool fused_ok, double act_elems) const;
  // LSTM forward/backward: the batch is dim 0 of inputs[batch_input]; kernels per timestep.
  OpCost recurrent(const OpGraph& g, int op, int batch_input, double kernels_per_step) const;  // from DRAM, or from the LLC when they fit
  Rates r_;
};

}  // namespace xpusim::analytical
