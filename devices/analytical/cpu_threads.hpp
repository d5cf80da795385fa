// How many threads a CPU op actually runs on, and what they cost (TF 1.x / Eigen intra-op
// parallelism on a cloud VM): Eigen's cost model gives an op one thread per ~100k cycles of
// work beyond a 100k-cycle start-up (small ops run on one thread and leave the pool idle), the
// guest spreads those threads over physical cores first (two vCPUs are one core's
// hyperthreads), cores on the second socket are worth numa_efficiency, and every woken thread
// adds a fork/join cost.
// docs/analytical-model.md ("CPU thread pool").
#pragma once

namespace xpusim::analytical {

struct DeviceSpec;
struct OpCost;

// What the op-cost model needs of a CPU machine; vcpus == 0 marks a non-CPU device.
struct CpuThreading {
  int vcpus = 0;                  // the VM's vCPUs = the size of TF's intra-op pool
  int vcpus_per_core = 2;         // hyperthreads per physical core
  double node_vcpus = 0;          // vCPUs on the first NUMA node (socket) the VM occupies
  double numa_efficiency = 0;     // worth of a second-node core relative to a first-node one
  double serial_fraction = 0;     // Amdahl share of an op that does not parallelise
  double frequency_hz = 0;
  double grain_cycles = 0;        // Eigen kPerThreadCycles (and kStartupCycles); 0 = every op uses every vCPU
  double sync_per_thread_s = 0;   // fork/join per woken thread and op (op_overhead_per_vcpu_us)
  double flops_per_cycle = 1;     // the build's peak per core: Eigen's cost model counts at it
  double lanes = 1;               // SIMD fp32 lanes of the build (elementwise cost per element)
  double gate_gemms = 1;          // LSTM contractions h.U per timestep (the framework's recurrent_gate_gemms)
};

CpuThreading make_cpu_threading(const DeviceSpec& d, int vcpus, int simd_lanes, double flops_per_cycle);

// Threads Eigen's TensorCostModel::numThreads gives an op of `cycles` work (Eigen 3.3,
// unsupported/Eigen/CXX11/src/Tensor/TensorCostModel.h: (cycles - kStartupCycles) /
// kPerThreadCycles + 0.9, both 100000, clamped to [1, pool]). grain 0: the whole pool.
int eigen_threads(double cycles, double grain_cycles, int pool);

// Effective cores of `threads` threads on the VM: physical cores first (at most one thread per
// core counts), first-node cores fully, second-node cores at numa_efficiency; then Amdahl.
double thread_speedup(const CpuThreading& t, int threads);

// Eigen's cost of an op in cycles: `flops` at the build's peak FLOP/cycle (contractions) or
// `vector_flops` one per lane per cycle (elementwise), plus 11/64 cycle per byte moved (an L2
// line fetch of 11 cycles per 64 bytes, TensorCostModel's kLoadCycles/kStoreCycles).
double eigen_cycles(const CpuThreading& t, double gemm_flops, double vector_flops, double bytes);

// Re-prices an op the rates priced on the whole machine (compute_s at thread_speedup(vcpus))
// on the threads Eigen gives it, and adds their fork/join: returns the threads used.
int apply_cpu_threads(OpCost& c, const CpuThreading& t, double cycles);

}  // namespace xpusim::analytical
