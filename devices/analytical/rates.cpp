#include "devices/analytical/rates.hpp"

#include <algorithm>

#include "devices/analytical/cpu_threads.hpp"
#include "devices/analytical/power_clock.hpp"

namespace xpusim::analytical {

namespace {
double tensor_peak_tflops(const DeviceSpec& d, Precision p) {
  switch (p) {
    case Precision::fp32: return 0;
    case Precision::tf32: return d.tensor_tf32_tflops;
    case Precision::mixed_fp16: return d.tensor_fp16_tflops;
    case Precision::bf16:
    case Precision::mixed_bf16: return d.tensor_bf16_tflops;
    case Precision::fp8: return d.tensor_fp8_tflops;  // fp8 GEMMs (Transformer Engine)
  }
  return 0;
}
double cuda_core_peak_tflops(const DeviceSpec& d, Precision p) {
  // fp16 storage runs packed half2 math on CUDA cores (P100: 2x fp32); tf32 is fp32 off tensor cores.
  return (p == Precision::mixed_fp16) ? d.fp16_tflops : d.fp32_tflops;
}
// The CUDA-core rate of a convolution or GEMM that misses the tensor cores on a kernel-model GPU.
// Mixed precision stores fp16 but accumulates in fp32: TensorFlow asks cuDNN for its
// PSEUDO_HALF configuration (fp16 data, CUDNN_DATA_FLOAT compute; TF_FP16_CONV_USE_FP32_COMPUTE
// and TF_FP16_MATMUL_USE_FP32_COMPUTE default to true), PyTorch sets the convolution's math type
// to float for half tensors, and cuBLAS's GemmEx runs CUBLAS_COMPUTE_32F. Those kernels convert
// to fp32 and run at the fp32 FMA rate, not the packed half2 rate: the RGB first layer (3 input
// channels, off the tensor cores) of AlexNet, ResNet and VGG costs 2x (GV100/TU10x) to 4x
// (GA100) the half2 price. The roofline devices (Kepler-Volta) keep the half2 rate their
// constants were fitted with (issue 29).
double kernel_cuda_core_peak_tflops(const DeviceSpec& d, Precision p) {
  return p == Precision::mixed_fp16 ? d.fp32_tflops : cuda_core_peak_tflops(d, p);
}
const CpuIsa& isa_for(const DeviceSpec& d, CpuBuild build) {
  return build == CpuBuild::compiled ? d.compiled_isa : d.pip_isa;
}
}  // namespace

double cpu_effective_cores(const DeviceSpec& d, int vcpus) {
  const CpuThreading t = make_cpu_threading(d, vcpus, 1, 1);
  const double cores = std::max(1.0, static_cast<double>(t.vcpus) / t.vcpus_per_core);
  const double node_cores = std::max(1.0, t.node_vcpus / t.vcpus_per_core);
  return std::min(cores, node_cores) + d.numa_efficiency * std::max(0.0, cores - node_cores);
}

double cpu_speedup(const DeviceSpec& d, int vcpus) {
  const double n = cpu_effective_cores(d, vcpus);
  return 1.0 / (d.serial_fraction + (1.0 - d.serial_fraction) / n);
}

double peak_gemm_flops_s(const DeviceSpec& d, Precision p, CpuBuild build, int vcpus) {
  if (d.kind == DeviceKind::gpu) {
    double t = tensor_peak_tflops(d, p);
    return 1e12 * (t > 0 ? t : cuda_core_peak_tflops(d, p));
  }
  const double cores = std::max(1.0, static_cast<double>(vcpus) / d.vcpus_per_core);
  return cores * d.frequency_ghz * 1e9 * isa_for(d, build).flops_per_cycle();
}

Rates make_rates(const DeviceSpec& d, Precision p, CpuBuild build, int vcpus) {
  Rates r;
  r.op_overhead_s = d.op_overhead_us * 1e-6;
  r.recurrent_step_s = d.recurrent_step_overhead_us * 1e-6;
  r.transcendental_flops = d.transcendental_flops;
  r.winograd_speedup = d.winograd_speedup;
  r.gemm_half_dim = d.gemm_half_dim;
  r.gemm_tile_n = d.gemm_tile_n;
  if (d.kind == DeviceKind::gpu) {
    // Kernel-model GPUs whose FP32 lanes also run the integer instructions lose their issue
    // slots to them (GA10x, Ada); the roofline devices' fitted efficiency already holds it.
    r.gemm_flops_s = (d.kernel_model() ? kernel_cuda_core_peak_tflops(d, p) * d.arch.fp32_issue_share()
                                       : cuda_core_peak_tflops(d, p)) *
                     1e12 * d.compute_efficiency;
    r.tensor_flops_s = tensor_peak_tflops(d, p) * 1e12 * d.tensor_efficiency;
    // Elementwise kernels issue one FLOP per lane per cycle, half the FMA peak.
    r.vector_flops_s = 0.5 * d.fp32_tflops * 1e12;
    r.memory_bytes_s = d.memory_bandwidth_gbps * 1e9 * d.memory_efficiency;
    // 2048 resident threads per SM on Pascal, Volta, Turing-class and Ampere/Hopper
    // (CUDA C Programming Guide, compute capability table; Turing 1024): one output each.
    r.fill_items = 2048.0 * d.sm_count;
    if (d.kernel_model()) {
      r.kernel_model = true;
      r.kernel.sm_count = d.sm_count;
      r.kernel.smem_bytes_per_sm = d.arch.smem_bytes_per_sm;
      r.kernel.registers_per_sm = d.arch.registers_per_sm;
      r.kernel.l2_bytes = d.l2_mb * 1e6;
      // L2 runs at the SM clock; the same achieved share as DRAM is assumed.
      r.kernel.l2_bytes_s = d.arch.l2_bytes_per_clk * d.boost_clock_mhz * 1e6 * d.memory_efficiency;
      r.kernel.dram_bytes_s = r.memory_bytes_s;
      // cp.async multistage pipelines (Ampere and later) keep 3+ operand slices in flight.
      r.kernel.pipeline_stages = d.arch.generation >= 8 ? 3 : 2;
      r.kernel.cluster_operand_sharing = d.arch.cluster_operand_sharing;
    }
    return r;
  }
  // Every op wakes and joins the thread pool: a cost that grows with the threads. With the
  // thread-pool model (thread_grain_cycles > 0) each op pays it for the threads Eigen wakes
  // for it (op_cost.cpp, cpu_threads.hpp); without, for the whole pool.
  if (d.thread_grain_cycles > 0)
    r.cpu = make_cpu_threading(d, vcpus, isa_for(d, build).simd_fp32_lanes, isa_for(d, build).flops_per_cycle());
  else
    r.op_overhead_s += d.op_overhead_per_vcpu_us * 1e-6 * vcpus;
  const double speedup = cpu_speedup(d, vcpus);
  const double core_flops = d.frequency_ghz * 1e9 * isa_for(d, build).flops_per_cycle();
  // Narrow SSE kernels keep their pipes busier than AVX2+FMA ones, which starve on operand
  // packing and cache bandwidth: separate efficiencies per build (docs/analytical-model.md).
  r.gemm_flops_s = core_flops * speedup * (build == CpuBuild::pip ? d.pip_compute_efficiency : d.compute_efficiency);
  // Elementwise loops vectorise with the same ISA but without FMA pairing.
  r.vector_flops_s = d.frequency_ghz * 1e9 * isa_for(d, build).simd_fp32_lanes * speedup;
  // A VM gets its vCPUs' share of a socket's DRAM channels; second-socket traffic is worth
  // numa_efficiency (remote accesses over UPI).
  const double vps = static_cast<double>(d.vcpus_per_socket);
  const double node = make_cpu_threading(d, vcpus, 1, 1).node_vcpus;
  const double local = std::min(node, vps) / vps;
  const double remote = std::max(0.0, static_cast<double>(vcpus) - node) / vps;
  r.memory_bytes_s = d.memory_bandwidth_gbps * 1e9 * d.memory_efficiency * (local + d.numa_efficiency * remote);
  // The cache is shared; its bandwidth scales with the cores that stream from it.
  r.llc_bytes = d.llc_mb * 1e6;
  r.llc_bytes_s = d.llc_bytes_per_cycle * d.frequency_ghz * 1e9 * std::max(1.0, static_cast<double>(vcpus) / d.vcpus_per_core);
  r.fill_items = 0;
  return r;
}

Rates stack_rates(const DeviceSpec& d, Precision p, CpuBuild build, int vcpus, const FrameworkSpec& fw) {
  const bool gpu = d.kind == DeviceKind::gpu;
  const bool tf32 = p == Precision::fp32 && fw.fp32_as_tf32 && d.supports(Precision::tf32);
  Rates rates = make_rates(d, tf32 ? Precision::tf32 : p, build, vcpus);
  rates.matmul_tensor_cores = !(tf32 && fw.fp32_matmul_strict);
  // Kernels of the framework relative to the stack the device constants were calibrated on.
  auto scaled = [](double rate, double efficiency, double scale) {
    if (scale == 1.0 || efficiency <= 0) return rate;
    return rate * std::min(efficiency * scale, 1.0) / efficiency;
  };
  const double gemm_eff = gpu ? d.compute_efficiency
                              : (build == CpuBuild::pip ? d.pip_compute_efficiency : d.compute_efficiency);
  // Kernel-model GPUs take the profile's kernel_* scales (1 unless set): their constants are
  // per generation and fitted on another path than the roofline devices' (issue 29).
  const bool km = gpu && d.kernel_model();
  auto pick = [km](double kernel_scale, double roofline_scale) { return km ? kernel_scale : roofline_scale; };
  rates.gemm_flops_s =
      scaled(rates.gemm_flops_s, gemm_eff, pick(fw.kernel_compute_efficiency_scale, fw.compute_efficiency_scale));
  // TF32 runs on kernel-model GPUs take the stack's TF32 factor on top (1 unless set).
  const double tf32_scale = km && (tf32 || p == Precision::tf32) ? fw.kernel_tf32_efficiency_scale : 1.0;
  rates.tensor_flops_s = scaled(rates.tensor_flops_s, d.tensor_efficiency,
                                pick(fw.kernel_tensor_efficiency_scale * tf32_scale, fw.tensor_efficiency_scale));
  rates.memory_bytes_s = scaled(rates.memory_bytes_s, d.memory_efficiency,
                                pick(fw.kernel_memory_efficiency_scale, fw.memory_efficiency_scale));
  rates.op_overhead_s *= fw.op_overhead_scale;
  rates.cpu.gate_gemms = fw.recurrent_gate_gemms;  // the stack's LSTM, on the thread-pool model
  rates.exchange_in_compute_precision = fw.exchange_in_compute_precision;
  // AMP runs take the stack's fused optimizer (apex FusedAdam); only the fp32 path loops.
  if (p == Precision::fp32 || p == Precision::tf32) {
    rates.unfused_update_kernels = fw.fp32_unfused_update_kernels;
    rates.unfused_update_accesses = fw.fp32_unfused_update_accesses;
  }
  // The padded input exists only where the stack's pipeline emits 16-bit data for the tensor
  // cores (DeepLearningExamples' MXNet runner asks for 4 channels in float16 only).
  const bool half = p == Precision::mixed_fp16 || p == Precision::mixed_bf16;
  if (km && half) rates.first_layer_channels_padded_to = fw.first_layer_input_channels_padded_to;
  rates.gemm_dims_padded_to = fw.gemm_dims_padded_to;  // only tensor-core GEMMs look at it
  if (km) {
    rates.conv_workspace_limit_bytes = fw.conv_workspace_limit_mb * 1024.0 * 1024.0;
    rates.conv_capped_efficiency = fw.conv_capped_efficiency;
  }
  rates.recurrent_step_s *= fw.op_overhead_scale;
  // Tensor-core kernels at the clock the board sustains under its power limit (power_clock.hpp):
  // the achieved rate sets the demand, and the tiles' L2 runs at the same SM clock.
  if (km && rates.tensor_flops_s > 0) {
    rates.tensor_clock_factor = tensor_clock_factor(d, tf32 ? Precision::tf32 : p, rates.tensor_flops_s);
    rates.tensor_flops_s *= rates.tensor_clock_factor;
    rates.kernel.l2_bytes_s *= rates.tensor_clock_factor;
  }
  return rates;
}

}  // namespace xpusim::analytical
