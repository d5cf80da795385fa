// The analytical engine's device spec: one configs/devices/<name>.yaml parsed once (after
// KEY=VALUE overrides) into an immutable struct. GPUs carry peak rates, memory and a few
// efficiency factors; CPUs carry vCPUs, SIMD width, FMA units, frequency and thread-scaling
// losses. The `host` CPU is detected at run time (host_detect.hpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "common/spec_reader.hpp"
#include "devices/analytical/gpu_arch_spec.hpp"
#include "engine/placement.hpp"
#include "models/dtype.hpp"

namespace xpusim::analytical {

enum class DeviceKind { gpu, cpu };

// CPU ISA as a framework build uses it: SIMD lanes for fp32 and FMA pipes per core.
struct CpuIsa {
  int simd_fp32_lanes = 4;  // lanes of the FMA units: SSE 4, AVX/AVX2 8, AVX-512 16 (Zen 4: 8)
  int fma_units = 0;        // 0 = no FMA: separate multiply and add pipes (1 each)
  // Peak fp32 FLOPs per cycle per physical core.
  double flops_per_cycle() const { return fma_units > 0 ? 2.0 * simd_fp32_lanes * fma_units : 2.0 * simd_fp32_lanes; }
};

// name, file, default_system and device_class come from DeviceConfig (engine/placement.hpp).
struct DeviceSpec : DeviceConfig {
  std::string description, source;
  DeviceKind kind = DeviceKind::gpu;
  std::vector<std::string> precisions;  // training precisions this device supports
  std::vector<std::string> calibrate;   // fittable efficiency constants (numeric top-level keys)
  std::string efficiency_from;          // device whose efficiency constants fill the keys this file leaves out ("" = none)
  int64_t memory_bytes = 0;             // per device (GPU) or per machine (CPU)
  double memory_bandwidth_gbps = 0;     // GPU: per device; CPU: per socket
  // Efficiency factors shared by every model (docs/analytical-model.md).
  double compute_efficiency = 0.5;      // fraction of CUDA-core / SIMD peak that conv/GEMM kernels reach
  double memory_efficiency = 0.7;       // fraction of memory bandwidth that streaming kernels reach
  double op_overhead_us = 10;           // per op: kernel launch + framework dispatch + tail
  double transcendental_flops = 4;      // FLOP slots per exp/tanh/sigmoid on the vector units
  double recurrent_step_overhead_us = 10;  // per timestep kernel inside a recurrent op (default: op_overhead_us)
  double step_overhead_ms = 0;          // per step: session run, host sync
  double gemm_half_dim = 0;             // GEMM dimension at which tiles run half full (0 = off)
  double gemm_tile_n = 0;               // output-channel tile width; channels are rounded up to it (0 = off)
  double winograd_speedup = 1.0;        // 3x3/5x5 stride-1 convolutions off tensor cores (Winograd / FFT tiling)
  int64_t reserved_bytes = 0;           // runtime context + allocator slack not usable by tensors
  double workspace_fraction = 0;        // conv workspace as a fraction of the largest activation

  // GPU only.
  double fp32_tflops = 0, fp16_tflops = 0;                               // CUDA cores
  double tensor_fp16_tflops = 0, tensor_bf16_tflops = 0, tensor_tf32_tflops = 0;  // tensor cores (0 = none)
  double tensor_fp8_tflops = 0;         // fp8 tensor cores (Ada, Hopper; 0 = none)
  double tensor_efficiency = 0.3;       // fraction of tensor-core peak conv/GEMM kernels reach
  // The GPU kernel model (docs/gpu_model.md): the architecture's table and, where it prices
  // kernels with tiles and waves (arch.kernel_model), the L2 and clock the tiles run against.
  // Then tensor/compute/memory efficiency and op_overhead_us are the architecture's constants.
  std::string architecture;
  ArchSpec arch;
  double l2_mb = 0;                     // L2 cache (MB, 1e6 bytes)
  double boost_clock_mhz = 0;           // the clock the datasheet peaks are stated at
  bool kernel_model() const { return kind == DeviceKind::gpu && arch.kernel_model; }
  double allreduce_efficiency = 0.5;    // fraction of the system's link bandwidth a collective reaches
  double comm_overlap = 1.0;            // share of a collective hidden under compute; the rest stalls the SMs
  int sm_count = 1;                     // streaming multiprocessors (small kernels cannot fill them)
  // The card's own ports, GB/s per direction (0 = not stated: the system's links alone count).
  // A link is as fast as its slower end: a PCIe Gen4 card in a Gen5 slot moves Gen4 rates.
  double pcie_gbps = 0;                 // host interface, as achieved (Gen3 x16 ~12, Gen4 ~24, Gen5 ~50)
  double nvlink_gbps = 0;               // all NVLink ports together (SXM board or PCIe bridge)
  bool pcie_p2p = true;                 // peers addressable over PCIe (false: GeForce Ampere/Ada)
  // Kernel model: energy of a dense fp16 tensor-core FLOP above idle at the boost clock (pJ; the
  // architecture's constant): with the power limit it sets the sustained clock (power_clock.hpp).
  double tensor_pj_per_flop = 0;

  // CPU only. `--count` is vCPUs (hyperthreads).
  double frequency_ghz = 0;
  int vcpus_per_core = 2;
  int vcpus_per_socket = 0;
  int max_vcpus = 0;
  CpuIsa compiled_isa, pip_isa;
  CpuBuild default_build = CpuBuild::pip;
  double op_overhead_per_vcpu_us = 0;   // thread-pool fork/join per op grows with the threads woken
  double serial_fraction = 0.05;        // Amdahl: share of a step that does not parallelise
  double numa_efficiency = 0.2;         // value of a core on the second socket relative to the first
  bool numa_balanced_vm = false;        // a VM larger than one socket gets half its vCPUs on each
  double thread_grain_cycles = 0;       // Eigen's cycles per extra thread (cpu_threads.hpp); 0 = every op uses every vCPU
  double pip_compute_efficiency = 0.7;  // the same for the generic (pip) build's simpler SSE kernels
  double memory_gb_per_vcpu = 0;       // machine memory that scales with vCPUs (GCE n1-highcpu: 0.9)
  bool detect = false;                  // host: cores, ISA and frequency from /proc and sysfs
  std::string detected_cpu;             // host: the detected CPU in one line (empty unless detect)
  double llc_mb = 0;                    // last-level cache (MB, 1e6 bytes) shared by the vCPUs; 0 = not modelled
  double llc_bytes_per_cycle = 32;      // last-level cache bandwidth per core and cycle

  bool supports(Precision p) const;
};

// Reads a device YAML (name under configs/devices/ or a path) with KEY=VALUE overrides applied
// first. Errors are UserError with file:line: key, or FieldError naming "device" / "set".
DeviceSpec load_device_spec(const std::string& name_or_path, const std::vector<std::string>& overrides = {});

// A device YAML file as a node, with the keys its `efficiency_from:` device supplies filled in
// (what load_device_spec parses; calibration reads its fittable constants from it). A file
// without `efficiency_from` comes back as written.
YAML::Node load_device_yaml(const std::string& path);

// The fields a device YAML of this kind declares, with unit, default and description: the
// default is the value a constant has when nothing was fitted (leave-one-study-out, docs).
std::vector<FieldDoc> device_spec_fields(const std::string& name_or_path);

}  // namespace xpusim::analytical
