// Parses configs/architectures/<name>.yaml into an immutable ArchSpec (cached per file).
#include "devices/analytical/gpu_arch_spec.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>

#include "common/config_paths.hpp"
#include "common/error.hpp"

namespace xpusim::analytical {

namespace fs = std::filesystem;

const char* math_dtype_name(MathDtype m) {
  switch (m) {
    case MathDtype::fp32: return "fp32";
    case MathDtype::fp16: return "fp16";
    case MathDtype::tensor_fp16: return "tensor_fp16";
    case MathDtype::tensor_bf16: return "tensor_bf16";
    case MathDtype::tensor_tf32: return "tensor_tf32";
    case MathDtype::tensor_fp8: return "tensor_fp8";
  }
  return "?";
}

double ArchSpec::flops_per_clk_sm(MathDtype m) const {
  switch (m) {
    case MathDtype::fp32: return fp32_flops_per_clk_sm;
    case MathDtype::fp16: return fp16_flops_per_clk_sm;
    case MathDtype::tensor_fp16: return tensor_fp16_flops_per_clk_sm;
    case MathDtype::tensor_bf16: return tensor_bf16_flops_per_clk_sm;
    case MathDtype::tensor_tf32: return tensor_tf32_flops_per_clk_sm;
    case MathDtype::tensor_fp8: return tensor_fp8_flops_per_clk_sm;
  }
  return 0;
}

double ArchSpec::fp32_issue_share() const {
  // Per clock the F FP32 lanes issue x FP and i*x INT instructions. A shared design has no
  // other INT32 lane: x + i*x <= F (every lane busy) and i*x <= s*F (INT only on the shared
  // ones), so x / F = min(1, 1 / (1 + i), s / i). A separate INT32 datapath leaves x = F.
  const double s = fp32_lanes_shared_with_int32, i = int_per_fp_instruction;
  if (s <= 0 || i <= 0) return 1.0;
  return std::min({1.0, 1.0 / (1.0 + i), s / i});
}

std::string arch_path(const std::string& name) {
  return find_config_file("architectures", name, "architecture", "architecture");
}

std::vector<std::string> arch_names() {
  std::vector<std::string> out;
  const fs::path dir = fs::path(config_dir()) / "architectures";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".yaml") out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

ArchSpec parse_arch(const YAML::Node& root, const std::string& path) {
  SpecReader r(root, path);
  auto non_negative = [](double v) { return v >= 0 ? "" : "must be >= 0"; };
  auto positive = [](double v) { return v > 0 ? "" : "must be > 0"; };
  auto fraction = [](double v) { return v > 0 && v <= 1 ? "" : "must be in (0, 1]"; };
  ArchSpec a;
  a.file = path;
  a.name = r.text("name", std::nullopt, "architecture name (the file stem)");
  a.description = r.text("description", std::string(""), "one line");
  a.source = r.text("source", std::nullopt, "whitepapers the figures come from");
  a.generation = r.number("generation", std::nullopt, "compute capability", "CUDA compute capability", positive);
  const std::string unit = "FLOP/clk/SM";
  a.fp32_flops_per_clk_sm = r.number("fp32_flops_per_clk_sm", std::nullopt, unit, "fp32 FMA pipes (FMA = 2)", positive);
  a.fp16_flops_per_clk_sm = r.number("fp16_flops_per_clk_sm", std::nullopt, unit, "fp16 on CUDA cores", positive);
  a.tensor_fp16_flops_per_clk_sm =
      r.number("tensor_fp16_flops_per_clk_sm", std::nullopt, unit, "fp16 tensor cores, dense (0 = none)", non_negative);
  a.tensor_bf16_flops_per_clk_sm =
      r.number("tensor_bf16_flops_per_clk_sm", std::nullopt, unit, "bf16 tensor cores, dense (0 = none)", non_negative);
  a.tensor_tf32_flops_per_clk_sm =
      r.number("tensor_tf32_flops_per_clk_sm", std::nullopt, unit, "TF32 tensor cores, dense (0 = none)", non_negative);
  a.tensor_fp8_flops_per_clk_sm =
      r.number("tensor_fp8_flops_per_clk_sm", std::nullopt, unit, "fp8 tensor cores, dense (0 = none)", non_negative);
  a.smem_bytes_per_sm = 1024.0 * r.number("smem_kb_per_sm", std::nullopt, "KiB", "shared memory per SM", positive);
  a.registers_per_sm = r.number("registers_per_sm", std::nullopt, "32-bit registers", "register file per SM", positive);
  a.l2_bytes_per_clk = r.number("l2_bytes_per_clk", std::nullopt, "B/clk", "L2 bandwidth of the chip per clock", positive);
  a.cluster_operand_sharing =
      r.number("cluster_operand_sharing", 1.0, "CTAs",
               "CTAs of a thread-block cluster that receive the larger operand panel of their tiles from one L2 "
               "read (TMA multicast, Hopper; two-SM MMA, Blackwell); 1 = no clusters (before Hopper)",
               [](double v) { return v >= 1 && v <= 16 && v == std::floor(v) ? "" : "must be a whole number in [1, 16]"; });
  a.fp32_lanes_shared_with_int32 =
      r.number("fp32_lanes_shared_with_int32", 0.0, "fraction",
               "share of the FP32 lanes that also execute INT32 (0 = a separate INT32 datapath)",
               [](double v) { return v >= 0 && v <= 1 ? "" : "must be in [0, 1]"; });
  a.int_per_fp_instruction =
      r.number("int_per_fp_instruction", 0.36, "instructions",
               "integer instructions per floating-point instruction of a kernel (Turing whitepaper: ~36 per 100)",
               non_negative);
  a.kernel_model = r.flag("kernel_model", std::nullopt, "price GEMMs and convolutions with the tile/wave model");
  const std::optional<double> none;
  auto constant = [&](const std::string& key, double def, const std::string& u, const std::string& desc,
                      const std::function<std::string(double)>& check) {
    return r.number(key, a.kernel_model ? none : std::optional<double>(def), u, desc, check);
  };
  if (a.kernel_model || r.has("tensor_efficiency")) {
    a.tensor_efficiency = constant("tensor_efficiency", 0.7, "fraction", "tensor-core peak a full tile reaches", fraction);
    a.cuda_efficiency = constant("cuda_efficiency", 0.7, "fraction", "CUDA-core peak a full tile reaches", fraction);
    a.memory_efficiency = constant("memory_efficiency", 0.8, "fraction", "DRAM bandwidth streaming kernels reach", fraction);
    a.launch_us = constant("launch_us", 8, "us", "per kernel: launch, dispatch and tail", non_negative);
    a.tensor_pj_per_flop = r.number("tensor_pj_per_flop", 0.0, "pJ/FLOP",
                                    "energy of a dense fp16 tensor-core FLOP above idle at the boost clock; with the "
                                    "board power limit it sets the sustained clock (0 = boost always holds)",
                                    non_negative);
    a.fitted_on = r.text("fitted_on", std::string(""), "the rows the constants were fitted on");
    YAML::Node c = r.child("calibrate", "constants the per-architecture calibration may fit");
    if (c && !c.IsNull()) {
      if (!c.IsSequence()) r.fail("calibrate", "expected a list of names");
      for (const auto& e : c) {
        const std::string k = e.IsScalar() ? e.Scalar() : "";
        if (k != "tensor_efficiency" && k != "cuda_efficiency" && k != "memory_efficiency" && k != "launch_us" &&
            k != "tensor_pj_per_flop")
          r.fail("calibrate", "'" + k + "' is not an efficiency constant (tensor_efficiency, cuda_efficiency, "
                              "memory_efficiency, launch_us, tensor_pj_per_flop)");
        a.calibrate.push_back(k);
      }
    }
  }
  r.finish();
  if (fs::path(path).stem().string() != a.name)
    throw UserError(yaml_location(path, root["name"]) + ": name: must equal the file stem '" +
                    fs::path(path).stem().string() + "'");
  return a;
}

}  // namespace

ArchSpec load_arch_spec(const std::string& name) {
  const std::string path = arch_path(name);
  return parse_arch(load_config_yaml(path), path);  // load_config_yaml caches the parsed file
}

}  // namespace xpusim::analytical
