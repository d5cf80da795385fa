#include "devices/analytical/device_spec.hpp"

#include <cmath>
#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <vector>

#include "common/checked_io.hpp"
#include "common/error.hpp"
#include "common/spec_reader.hpp"
#include "devices/analytical/host_detect.hpp"
#include "models/zoo.hpp"

namespace xpusim::analytical {

namespace fs = std::filesystem;

namespace {
using checks::fraction;
using checks::non_negative;
using checks::positive;

std::vector<std::string> string_list(SpecReader& r, const std::string& key, const std::string& desc) {
  std::vector<std::string> out;
  YAML::Node n = r.child(key, desc);
  if (!n || n.IsNull()) return out;  // child() returns a null node for a missing key
  if (!n.IsSequence()) r.fail(key, "expected a list of names");
  for (const auto& e : n) {
    if (!e.IsScalar()) r.fail(key, "expected a list of names");
    out.push_back(e.Scalar());
  }
  return out;
}

CpuIsa read_isa(SpecReader& r, const std::string& prefix, CpuIsa def) {
  CpuIsa isa;
  isa.simd_fp32_lanes = static_cast<int>(r.integer(prefix + "simd_fp32_lanes", def.simd_fp32_lanes, "lanes",
                                                   "fp32 lanes of the units that execute the build's FMAs (SSE 4, AVX2 8, AVX-512 16; AMD Zen 4 runs AVX-512 on 256-bit units: 8)",
                                                   [](long long v) { return v == 1 || v == 4 || v == 8 || v == 16 ? "" : "must be 1, 4, 8 or 16"; }));
  isa.fma_units = static_cast<int>(r.integer(prefix + "fma_units", def.fma_units, "pipes",
                                             "FMA pipes per core the build uses (0 = no FMA)",
                                             [](long long v) { return v >= 0 && v <= 2 ? "" : "must be 0, 1 or 2"; }));
  return isa;
}
// configs/devices/NAME.yaml or a path.
std::string device_path(const std::string& name_or_path) {
  return find_config_file("devices", name_or_path, "device", "device");
}
}  // namespace

bool DeviceSpec::supports(Precision p) const {
  return std::find(precisions.begin(), precisions.end(), precision_name(p)) != precisions.end();
}

namespace {
DeviceSpec parse_device_spec(const YAML::Node& root, const std::string& path, std::vector<FieldDoc>* fields = nullptr);

// The efficiency constants a device takes from the calibrated device of its generation
// (`efficiency_from: NAME`) unless its own file sets them: the shared software-stack and
// kernel factors, not the device's physical specs. They used to be copied by hand, and the
// copies went stale when the source device was refitted (V100, A100, H100 and RTX cards kept
// P100's op_overhead_us 40.5 and allreduce_efficiency 0.22 after P100 was refitted to 38.9
// and 0.152): taking them at load time makes drift impossible.
const std::vector<std::string>& inherited_keys() {
  static const std::vector<std::string> keys = {
      "compute_efficiency", "tensor_efficiency", "memory_efficiency", "op_overhead_us", "recurrent_step_overhead_us",
      "step_overhead_ms", "allreduce_efficiency", "comm_overlap", "winograd_speedup", "gemm_half_dim", "gemm_tile_n",
      "reserved_gb", "workspace_fraction", "transcendental_flops", "pip_compute_efficiency", "op_overhead_per_vcpu_us",
      "serial_fraction", "numa_efficiency"};
  return keys;
}

// Fills the keys `root` does not set from its `efficiency_from` device, recursively (a chain
// such as A10 -> A100 -> V100 -> P100 resolves to the values each link sets). The source file
// is parsed and validated on its own first, so an error in it names its own file and line.
void inherit_efficiency(YAML::Node& root, const std::string& path, std::vector<std::string>& chain) {
  if (!root.IsMap() || !root["efficiency_from"]) return;
  const YAML::Node from = root["efficiency_from"];
  const auto where = [&] { return path + ":" + std::to_string(from.Mark().line + 1) + ": efficiency_from: "; };
  if (!from.IsScalar() || from.Scalar().empty()) throw UserError(where() + "expected a device name");
  const std::string name = from.Scalar();
  std::string src;
  try {
    src = device_path(name);
  } catch (const UserError& e) {
    throw UserError(where() + e.what());
  }
  chain.push_back(fs::weakly_canonical(path).string());
  if (std::find(chain.begin(), chain.end(), fs::weakly_canonical(src).string()) != chain.end())
    throw UserError(where() + "'" + name + "' takes its constants back from this device (a cycle)");
  YAML::Node base = load_config_yaml(src);
  inherit_efficiency(base, src, chain);
  chain.pop_back();
  const DeviceSpec checked = parse_device_spec(base, src);  // validates the source, errors name src
  const YAML::Node engine = root["engine"], kind = root["kind"];
  if (engine && engine.IsScalar() && engine.Scalar() != "analytical")
    throw UserError(where() + "only analytical devices take constants from another device");
  const bool gpu = kind && kind.IsScalar() && kind.Scalar() == "gpu";
  if (kind && kind.IsScalar() && gpu != (checked.kind == DeviceKind::gpu))
    throw UserError(where() + "'" + name + "' is a " + (gpu ? "CPU" : "GPU") + "; a device takes constants from one of its kind");
  for (const auto& k : inherited_keys())
    if (!root[k] && base[k]) root[k] = YAML::Clone(base[k]);
}
}  // namespace

std::vector<FieldDoc> device_spec_fields(const std::string& name_or_path) {
  const std::string path = device_path(name_or_path);
  std::vector<FieldDoc> fields;
  parse_device_spec(load_device_yaml(path), path, &fields);
  return fields;
}

YAML::Node load_device_yaml(const std::string& path) {
  YAML::Node root = load_config_yaml(path);
  std::vector<std::string> chain;
  inherit_efficiency(root, path, chain);
  return root;
}

DeviceSpec load_device_spec(const std::string& name_or_path, const std::vector<std::string>& overrides) {
  const std::string path = device_path(name_or_path);
  YAML::Node root = load_device_yaml(path);
  if (overrides.empty()) return parse_device_spec(root, path);
  apply_overrides(root, overrides);
  try {
    return parse_device_spec(root, path);
  } catch (const FieldError&) {
    throw;
  } catch (const UserError& e) {
    // Find the culprit only on failure (calibration parses with overrides thousands of times):
    // an error of the file alone names file:line; one from an override names that --set, not
    // a line of the unedited file.
    const auto unedited = [&] { return load_device_yaml(path); };
    parse_device_spec(unedited(), path);
    for (const auto& o : overrides) {
      YAML::Node n = unedited();
      apply_overrides(n, {o});
      try {
        parse_device_spec(n, path);
      } catch (const FieldError&) {
        throw;
      } catch (const UserError& e1) {
        throw FieldError("set", o + ": " + without_file_location(e1.what(), path));
      }
    }
    throw FieldError("set", without_file_location(e.what(), path));
  }
}

namespace {

// The architecture a GPU names, its per-dtype checks, and the kernel model's inputs. A tensor
// rate the architecture lacks (TF32 before Ampere, fp8 before Ada) or one it has but the file
// leaves out is an error at that key; so is a precision the architecture cannot run.
template <class Num>
void read_architecture(SpecReader& r, DeviceSpec& d, Num& num) {
  d.architecture = r.text("architecture", std::nullopt,
                          "GPU microarchitecture (configs/architectures/NAME.yaml: kepler, pascal, volta, turing, "
                          "ampere_ga100, ampere_ga10x, ada, hopper, blackwell)");
  const std::vector<std::string> known = arch_names();
  if (std::find(known.begin(), known.end(), d.architecture) == known.end()) {
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    r.fail("architecture", "unknown architecture '" + d.architecture + "' (known: " + list + ")");
  }
  d.arch = load_arch_spec(d.architecture);
  const ArchSpec& a = d.arch;
  struct Rate {
    const char* key;
    MathDtype dtype;
    double value;
    const char* what;
  };
  const Rate rates[] = {{"tensor_fp16_tflops", MathDtype::tensor_fp16, d.tensor_fp16_tflops, "fp16 tensor cores"},
                        {"tensor_bf16_tflops", MathDtype::tensor_bf16, d.tensor_bf16_tflops, "bf16 tensor cores"},
                        {"tensor_tf32_tflops", MathDtype::tensor_tf32, d.tensor_tf32_tflops, "TF32 tensor cores"},
                        {"tensor_fp8_tflops", MathDtype::tensor_fp8, d.tensor_fp8_tflops, "fp8 tensor cores"}};
  for (const auto& rt : rates) {
    if (!a.has(rt.dtype) && rt.value > 0)
      r.fail(rt.key, std::string("architecture ") + a.name + " has no " + rt.what + " (" + a.file + ")");
    if (a.has(rt.dtype) && !r.has(rt.key))
      r.fail(rt.key, std::string("required: architecture ") + a.name + " has " + rt.what +
                         " (state the datasheet's dense rate)");
  }
  for (const auto& p : d.precisions) {
    const bool tf32 = p == "tf32", bf16 = p == "bf16" || p == "mixed_bf16";
    if ((tf32 && !a.has(MathDtype::tensor_tf32)) || (bf16 && !a.has(MathDtype::tensor_bf16)))
      r.fail("precisions", "precision " + p + " needs " + (tf32 ? "TF32" : "bf16") + " tensor cores, which architecture " +
                               a.name + " lacks (Ampere and later)");
    if (p == "fp8" && !a.has(MathDtype::tensor_fp8))
      r.fail("precisions", "precision fp8 needs fp8 tensor cores, which architecture " + a.name + " lacks (Ada, Hopper and later)");
  }
  const std::optional<double> need = a.kernel_model ? std::nullopt : std::optional<double>(0.0);
  auto non_negative = [](double v) { return v >= 0 ? "" : "must be >= 0"; };
  auto positive_or_zero = [&](double v) { return v > 0 || (!a.kernel_model && v == 0) ? "" : "must be > 0"; };
  d.l2_mb = r.number("l2_mb", need, "MB", "L2 cache (tiles' operands are re-read from it)", positive_or_zero);
  d.boost_clock_mhz = r.number("boost_clock_mhz", need, "MHz", "clock of the datasheet peaks (L2 bytes per clock)",
                               positive_or_zero);
  (void)non_negative;
  if (!a.kernel_model) return;
  // The generation's constants; `xpusim calibrate --architecture` sets these keys by override
  // on every device of the architecture while it fits (a device file does not set them).
  auto fraction = [](double v) { return v > 0 && v <= 1 ? "" : "must be in (0, 1]"; };
  d.tensor_efficiency = num("kernel_tensor_efficiency", a.tensor_efficiency, "fraction",
                            "architecture constant: tensor-core peak a full tile reaches (default: the architecture's)", fraction);
  d.compute_efficiency = num("kernel_cuda_efficiency", a.cuda_efficiency, "fraction",
                             "architecture constant: CUDA-core peak a full tile reaches (default: the architecture's)", fraction);
  d.memory_efficiency = num("kernel_memory_efficiency", a.memory_efficiency, "fraction",
                            "architecture constant: DRAM bandwidth streaming kernels reach (default: the architecture's)", fraction);
  d.op_overhead_us = num("kernel_launch_us", a.launch_us, "us",
                         "architecture constant: per kernel launch, dispatch and tail (default: the architecture's)",
                         [](double v) { return v >= 0 ? "" : "must be >= 0"; });
  d.recurrent_step_overhead_us = d.op_overhead_us;
  d.tensor_pj_per_flop = num("kernel_tensor_pj_per_flop", a.tensor_pj_per_flop, "pJ/FLOP",
                             "architecture constant: energy of a dense fp16 tensor-core FLOP above idle at the boost "
                             "clock, which with max_power_w sets the sustained clock (default: the architecture's)",
                             [](double v) { return v >= 0 ? "" : "must be >= 0"; });
}

DeviceSpec parse_device_spec(const YAML::Node& root, const std::string& path, std::vector<FieldDoc>* fields) {
  SpecReader r(root, path);
  DeviceSpec d;
  d.file = path;
  std::set<std::string> numeric;  // keys `calibrate:` may name
  auto num = [&](const std::string& key, std::optional<double> def, const std::string& unit, const std::string& desc,
                 const std::function<std::string(double)>& check) {
    numeric.insert(key);
    return r.number(key, def, unit, desc, check);
  };
  d.name = r.text("name", std::nullopt, "device name (configs/devices/NAME.yaml)");
  d.efficiency_from = r.text("efficiency_from", std::string(""),
                             "calibrated device of the same generation whose efficiency constants this one takes "
                             "where its file does not set them");
  d.description = r.text("description", std::string(""), "one line");
  r.text("engine", std::nullopt, "engine that models this device", {"analytical"});
  d.kind = r.text("kind", std::nullopt, "gpu or cpu", {"gpu", "cpu"}) == "gpu" ? DeviceKind::gpu : DeviceKind::cpu;
  d.device_class = d.kind == DeviceKind::cpu ? DeviceClass::cpu : DeviceClass::accelerator;
  d.default_system = r.text("default_system", std::nullopt, "system used when a request names none");
  d.source = r.text("source", std::nullopt, "where the specs come from");
  d.precisions = string_list(r, "precisions", "training precisions the device supports");
  for (const auto& p : d.precisions) {
    Precision pp;
    if (!parse_precision(p, pp)) r.fail("precisions", "unknown precision '" + p + "' (one of " + precision_choices() + ")");
  }
  if (d.precisions.empty()) d.precisions = {"fp32"};
  // Bytes are int64: a larger value wrapped in the conversion (memory_gb 1e29 made a V100
  // "not fit" ResNet-50). 1e6 GB (a petabyte) per device is far past any machine.
  auto gb = [](double v) { return v >= 0 && v <= 1e6 ? "" : "must be in [0, 1e6] GB"; };
  d.memory_bytes = static_cast<int64_t>(num("memory_gb", d.kind == DeviceKind::cpu ? std::optional<double>(0.0) : std::nullopt, "GB (1e9 bytes)",
                                            "memory per device (GPU) or machine (CPU; 0 = scale with vCPUs)", gb) * 1e9);
  d.memory_bandwidth_gbps = num("memory_bandwidth_gbps", std::nullopt, "GB/s", "peak DRAM bandwidth (CPU: per socket)", positive);
  d.compute_efficiency = num("compute_efficiency", 0.5, "fraction", "conv/GEMM share of CUDA-core or SIMD peak", fraction);
  d.memory_efficiency = num("memory_efficiency", 0.7, "fraction", "streaming kernels' share of memory bandwidth", fraction);
  d.op_overhead_us = num("op_overhead_us", 10, "us", "per op: launch + framework dispatch + tail", non_negative);
  // NVIDIA SFUs issue a transcendental at 1/4 of the FMA rate (CUDA C Programming Guide,
  // arithmetic instruction throughput); a CPU evaluates exp/tanh as a vectorised polynomial
  // plus range reduction and a division, ~20-30 FLOP slots (Eigen's ptanh/plogistic, SLEEF).
  d.transcendental_flops = num("transcendental_flops", d.kind == DeviceKind::cpu ? 25.0 : 4.0, "FLOP",
                               "vector-unit FLOP slots one exp/tanh/sigmoid costs", positive);
  // A framework that runs a recurrent layer as one op per timestep (TF/Keras without cuDNN)
  // pays the per-op overhead per timestep; a fused recurrent kernel (oneDNN/cuDNN RNNs, the
  // CPU backend's LSTM) pays only its internal loop. Default: the per-op overhead.
  d.recurrent_step_overhead_us = num("recurrent_step_overhead_us", d.op_overhead_us, "us",
                                     "per timestep and kernel of a recurrent layer (default: op_overhead_us)", non_negative);
  d.step_overhead_ms = num("step_overhead_ms", 0, "ms", "per step: session run and host sync", non_negative);
  d.winograd_speedup = num("winograd_speedup", 1.0, "x", "3x3 stride-1 convs off tensor cores (Winograd)",
                           [](double v) { return v >= 1 && v <= 4 ? "" : "must be in [1, 4]"; });
  d.gemm_half_dim = num("gemm_half_dim", 0, "elements", "GEMM dimension at which tiles run half full (0 = off)", non_negative);
  d.gemm_tile_n = num("gemm_tile_n", 0, "channels", "output-channel width of a GEMM/conv kernel tile; a partial last tile still costs a whole one (0 = off: no tile rounding)",
                      [](double v) {
                        return v == 0 || (v >= 1 && v <= 65536 && v == std::floor(v)) ? "" : "must be 0 (off) or a whole number in [1, 65536]";
                      });
  d.reserved_bytes = static_cast<int64_t>(num("reserved_gb", 0, "GB", "runtime context + allocator slack", gb) * 1e9);
  d.workspace_fraction = num("workspace_fraction", 0.0, "fraction", "conv workspace vs the largest activation", non_negative);
  if (d.kind == DeviceKind::gpu) {
    d.fp32_tflops = num("fp32_tflops", std::nullopt, "TFLOP/s", "fp32 peak on CUDA cores (boost clock)", positive);
    d.fp16_tflops = num("fp16_tflops", d.fp32_tflops, "TFLOP/s", "fp16 peak on CUDA cores", positive);
    d.tensor_fp16_tflops = num("tensor_fp16_tflops", 0, "TFLOP/s", "fp16 tensor-core peak (0 = none)", non_negative);
    d.tensor_bf16_tflops = num("tensor_bf16_tflops", 0, "TFLOP/s", "bf16 tensor-core peak (0 = none)", non_negative);
    d.tensor_tf32_tflops = num("tensor_tf32_tflops", 0, "TFLOP/s", "TF32 tensor-core peak (0 = none)", non_negative);
    d.tensor_fp8_tflops = num("tensor_fp8_tflops", 0, "TFLOP/s", "fp8 tensor-core peak, dense (0 = none)", non_negative);
    d.tensor_efficiency = num("tensor_efficiency", 0.3, "fraction", "conv/GEMM share of tensor-core peak", fraction);
    read_architecture(r, d, num);
    d.allreduce_efficiency = num("allreduce_efficiency", 0.5, "fraction", "collective's share of link bandwidth", fraction);
    d.comm_overlap = num("comm_overlap", 1.0, "fraction", "share of a collective hidden under compute",
                         [](double v) { return v >= 0 && v <= 1 ? "" : "must be in [0, 1]"; });
    d.sm_count = static_cast<int>(r.integer("sm_count", std::nullopt, "SMs", "streaming multiprocessors",
                                            [](long long v) { return v > 0 ? "" : "must be > 0"; }));
    // Physical ports, not efficiency constants: read outside `num` so `calibrate:` cannot name them.
    d.pcie_gbps = r.number("pcie_gbps", 0.0, "GB/s", "host interface per direction, as achieved (0 = not stated)", non_negative);
    d.nvlink_gbps = r.number("nvlink_gbps", 0.0, "GB/s", "all NVLink ports together per direction (0 = none or not stated)", non_negative);
    d.pcie_p2p = r.flag("pcie_p2p", true,
                        "the driver lets GPUs address each other over PCIe (false: collectives are staged in host memory)");
  } else {
    d.detect = r.flag("detect", false, "detect vCPUs, ISA and frequency of this machine at run time");
    d.frequency_ghz = num("frequency_ghz", d.detect ? std::optional<double>(0.0) : std::nullopt, "GHz", "sustained all-core clock",
                          d.detect ? std::function<std::string(double)>(non_negative) : positive);
    d.vcpus_per_core = static_cast<int>(r.integer("vcpus_per_core", 2, "vCPUs", "hyperthreads per physical core",
                                                  [](long long v) { return v == 1 || v == 2 ? "" : "must be 1 or 2"; }));
    d.vcpus_per_socket = static_cast<int>(r.integer("vcpus_per_socket", d.detect ? std::optional<long long>(0) : std::nullopt, "vCPUs", "vCPUs of one socket (NUMA node)",
                                                    [&](long long v) { return v > 0 || (d.detect && v == 0) ? "" : "must be > 0"; }));
    d.max_vcpus = static_cast<int>(r.integer("max_vcpus", d.detect ? std::optional<long long>(0) : std::nullopt, "vCPUs", "largest machine",
                                             [&](long long v) { return v > 0 || (d.detect && v == 0) ? "" : "must be > 0"; }));
    d.compiled_isa = read_isa(r, "compiled_", CpuIsa{8, 2});
    d.pip_isa = read_isa(r, "pip_", CpuIsa{4, 0});
    d.pip_compute_efficiency = num("pip_compute_efficiency", 0.7, "fraction", "conv/GEMM share of SIMD peak, pip build", fraction);
    // Times up to 65536 vCPUs, in int64 bytes (memory.cpp): at most 1e4 GB per vCPU.
    d.memory_gb_per_vcpu = num("memory_gb_per_vcpu", 0, "GB", "machine memory per vCPU when memory_gb is 0",
                               [](double v) { return v >= 0 && v <= 1e4 ? "" : "must be in [0, 1e4] GB"; });
    parse_cpu_build(r.text("default_build", std::string("pip"), "framework build when none is requested", {"pip", "compiled"}),
                    d.default_build);
    d.op_overhead_per_vcpu_us = num("op_overhead_per_vcpu_us", 0.0, "us",
                                    "per op and vCPU: waking and joining the thread pool", non_negative);
    d.serial_fraction = num("serial_fraction", 0.05, "fraction", "Amdahl serial share of a step",
                            [](double v) { return v >= 0 && v < 1 ? "" : "must be in [0, 1)"; });
    d.numa_efficiency = num("numa_efficiency", 0.2, "fraction", "worth of a second-socket core (0: adds nothing)",
                            [](double v) { return v >= 0 && v <= 1 ? "" : "must be in [0, 1]"; });
    d.numa_balanced_vm = r.flag("numa_balanced_vm", false,
                                "a VM larger than one socket gets half its vCPUs on each NUMA node (false: it fills the first)");
    d.thread_grain_cycles = num("thread_grain_cycles", 0, "cycles",
                                "work per extra intra-op thread (Eigen's cost model: 100000); 0 = every op uses every vCPU",
                                non_negative);
    // An op whose bytes fit in the last-level cache streams from it, not from DRAM (its
    // inputs were just written by the op before it). 32 B/cycle/core: AMD Zen 2/3 L3 and
    // Intel Skylake L2 fill bandwidth (vendors' optimization guides).
    d.llc_mb = num("llc_mb", 0, "MB", "last-level cache shared by the vCPUs (0 = not modelled; host: detected)", non_negative);
    d.llc_bytes_per_cycle = num("llc_bytes_per_cycle", 32, "B/cycle", "last-level cache bandwidth per core", positive);
    if (d.detect) {
      // What this machine reports fills every field the file (or --set) does not state, so a
      // user can correct one detected figure without turning detection off.
      HostCpuInfo h = detect_host_cpu();
      d.detected_cpu = describe_host_cpu(h);
      if (!r.has("max_vcpus")) d.max_vcpus = h.logical_cpus;
      if (!r.has("vcpus_per_core")) d.vcpus_per_core = std::clamp(h.logical_cpus / std::max(1, h.physical_cores), 1, 2);
      if (!r.has("vcpus_per_socket")) d.vcpus_per_socket = std::max(1, h.logical_cpus / h.sockets);
      if (d.frequency_ghz == 0) d.frequency_ghz = h.max_ghz > 0 ? h.max_ghz : 2.0;
      // Lanes of the units that execute the FMAs, not of the widest ISA (host_detect.hpp).
      if (!r.has("compiled_simd_fp32_lanes")) d.compiled_isa.simd_fp32_lanes = simd_datapath_bits(h) / 32;
      if (!r.has("compiled_fma_units")) d.compiled_isa.fma_units = h.fma ? 2 : 0;
      if (d.memory_bytes == 0) d.memory_bytes = h.memory_bytes;
      if (d.llc_mb == 0) d.llc_mb = static_cast<double>(h.llc_bytes) / 1e6;
    }
  }
  // Power for modelled energy (engine/power.hpp): a CPU states it per physical core.
  d.power = read_power_spec(r);
  if (d.kind == DeviceKind::cpu) d.power.devices_per_figure = d.vcpus_per_core;
  d.calibrate = string_list(r, "calibrate", "fittable efficiency constants (numeric top-level keys)");
  for (const auto& k : d.calibrate)
    if (!numeric.count(k)) r.fail("calibrate", "'" + k + "' is not a numeric field of this device");
  r.finish();
  if (fields) *fields = r.docs();
  return d;
}

}  // namespace

}  // namespace xpusim::analytical
