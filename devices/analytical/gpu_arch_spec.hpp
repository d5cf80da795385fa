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
  bool kernel_model = false;             // priced by the tile/wave model (else the roofline)
  // Efficiency constants (kernel_model only), shared by every device of the generation.
  double tensor_efficiency = 0.7, cuda_efficiency = 0.7, memory_efficiency = 0.8, launch_us = 8;
  std::vector<std::string> calibrate;
  std::string fitted_on;

  double flops_per_clk_sm(MathDtype m) const;
  bool has(MathDtype m) const { return flops_per_clk_sm(m) > 0; }
};

// configs/architectures/NAME.yaml; FieldError("architecture") when unknown.
ArchSpec load_arch_spec(const std::string& name);
// The names of configs/architectures/*.yaml, sorted.
std::vector<std::string> arch_names();
// Path of an architecture file (FieldError("architecture") listing the known ones).
std::string arch_path(const std::string& name);

}  // namespace xpusim::analytical
