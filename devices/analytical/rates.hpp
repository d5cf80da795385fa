// Turns a device spec into the effective rates of one request: precision picks CUDA cores or
// tensor cores; on CPUs the vCPU count, the framework build's ISA and the thread-scaling
// losses (Amdahl serial share, second-socket cores worth less) set the rates.
#pragma once
#include <string>

#include "devices/analytical/device_spec.hpp"
#include "devices/analytical/op_cost.hpp"
#include "engine/framework_spec.hpp"

namespace xpusim::analytical {

// Physical cores of a CPU placement that a step effectively uses (first socket full value,
// second socket at numa_efficiency), then Amdahl's speedup over one core.
double cpu_effective_cores(const DeviceSpec& d, int vcpus);
double cpu_speedup(const DeviceSpec& d, int vcpus);

// Peak (not derated) conv/GEMM FLOP/s of the path a precision uses: for reports.
double peak_gemm_flops_s(const DeviceSpec& d, Precision p, CpuBuild build, int vcpus);

Rates make_rates(const DeviceSpec& d, Precision p, CpuBuild build, int vcpus);

// make_rates for a framework stack: its "fp32" as TF32 where it says so and the device has TF32
// tensor cores, its kernel-efficiency scales (each scaled efficiency capped at 1: no stack runs
// faster than the device's peak) and overheads. What the engine and `predict --explain` price with.
Rates stack_rates(const DeviceSpec& d, Precision p, CpuBuild build, int vcpus, const FrameworkSpec& fw);

}  // namespace xpusim::analytical
