// The microarchitecture table of the GPU kernel model (docs/gpu_model.md): one
// configs/architectures/<name>.yaml per generation (Kepler ... Hopper) with per-SM math rates per
// dtype, shared memory, registers and L2 bandwidth per clock, and — for the generations the tile
// model prices — the few efficiency constants every device of that generation shares.
#pragma once
#include <string>
#include <vector>

#include "common/spec_reader.hpp"

namespace xpusim::analytical {

// The math a GEMM runs in: which pipe and operand width.
enum class MathDtype { fp32, fp16, tensor_fp16, tensor_bf16, tensor_tf32, tensor_fp8 };
const char* math_dtype_name(MathDtype m);

struct ArchSpec {
  std::string name, description, source, file;
  double generation = 0;                 // compute capability, for ordering and reports
  // Dense FLOP per clock per SM (an FMA counts 2); 0 = the architecture lacks the unit.
  double fp32_flops_per_clk_sm = 0, fp16_flops_per_clk_sm = 0;
  double tensor_fp16_flops_per_clk_sm = 0, tensor_bf16_flops_per_clk_sm = 0;
  double tensor_tf32_flops_per_clk_sm = 0, tensor_fp8_flops_per_clk_sm = 0;
  double smem_bytes_per_sm = 0;
  double registers_per_sm = 0;
  double l2_bytes_per_clk = 0;           // whole chip
  // CTAs of a cluster that share one operand panel's L2 read (Hopper's TMA multicast,
  // Blackwell's two-SM MMA); 1 before Hopper (no thread-block clusters).
  double cluster_operand_sharing = 1;
  bool kernel_model = false;             // priced by the tile/wave model (else the roofline)
  // Share of the FP32 lanes that also execute INT32 (GA10x, Ada: one of two datapaths per SM
  // partition); 0 = integer instructions have their own INT32 datapath (Volta, Turing, GA100,
  // Hopper). With a shared datapath the address/index arithmetic of a kernel takes FP32 issue
  // slots (docs/gpu_model.md, "FP32 lanes shared with INT32").
  double fp32_lanes_shared_with_int32 = 0;
  double int_per_fp_instruction = 0.36;  // integer per floating-point instruction (Turing whitepaper)
  // Efficiency constants (kernel_model only), shared by every device of the generation.
  double tensor_efficiency = 0.7, cuda_efficiency = 0.7, memory_efficiency = 0.8, launch_us = 8;
  // Energy a dense fp16/bf16 tensor-core FLOP draws above idle at the boost clock (kernel,
  // operand traffic and all), pJ: with the board's power limit it sets the clock tensor-core
  // kernels sustain (power_clock.hpp). 0 = the boost clock always holds.
  double tensor_pj_per_flop = 0;
  std::vector<std::string> calibrate;
  std::string fitted_on;

  double flops_per_clk_sm(MathDtype m) const;
  // Share of the FP32 FMA peak left to floating-point instructions once the integer ones have
  // issued: 1 with a separate INT32 datapath, else min(1, 1 / (1 + i), s / i).
  double fp32_issue_share() const;
  bool has(MathDtype m) const { return flops_per_clk_sm(m) > 0; }
};

// configs/architectures/NAME.yaml; FieldError("architecture") when unknown.
ArchSpec load_arch_spec(const std::string& name);
// The names of configs/architectures/*.yaml, sorted.
std::vector<std::string> arch_names();
// Path of an architecture file (FieldError("architecture") listing the known ones).
std::string arch_path(const std::string& name);

}  // namespace xpusim::analytical
