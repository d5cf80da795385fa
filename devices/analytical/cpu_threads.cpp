// Threads per CPU op (Eigen's cost model), their placement on cores and sockets, and their
// fork/join cost. See cpu_threads.hpp.
#include "devices/analytical/cpu_threads.hpp"

#include <algorithm>
#include <cmath>

#include "devices/analytical/device_spec.hpp"
#include "devices/analytical/op_cost.hpp"

namespace xpusim::analytical {

CpuThreading make_cpu_threading(const DeviceSpec& d, int vcpus, int simd_lanes, double flops_per_cycle) {
  CpuThreading t;
  t.vcpus = std::max(1, vcpus);
  t.vcpus_per_core = std::max(1, d.vcpus_per_core);
  const double v = static_cast<double>(t.vcpus), socket = static_cast<double>(std::max(1, d.vcpus_per_socket));
  // A VM larger than one socket: the hypervisor either fills the first socket (vCPUs beyond it
  // on the second) or balances the two NUMA nodes (half on each).
  t.node_vcpus = v <= socket ? v : (d.numa_balanced_vm ? v / 2 : socket);
  t.numa_efficiency = d.numa_efficiency;
  t.serial_fraction = d.serial_fraction;
  t.frequency_hz = d.frequency_ghz * 1e9;
  t.grain_cycles = d.thread_grain_cycles;
  t.sync_per_thread_s = d.op_overhead_per_vcpu_us * 1e-6;
  t.flops_per_cycle = std::max(1e-9, flops_per_cycle);
  t.lanes = std::max(1, simd_lanes);
  return t;
}

int eigen_threads(double cycles, double grain_cycles, int pool) {
  pool = std::max(1, pool);
  if (grain_cycles <= 0) return pool;
  const double n = (cycles - grain_cycles) / grain_cycles + 0.9;
  if (!(n >= 1)) return 1;  // also NaN
  return n >= pool ? pool : static_cast<int>(n);
}

double thread_speedup(const CpuThreading& t, int threads) {
  const double vpc = static_cast<double>(t.vcpus_per_core);
  const double cores = std::max(1.0, static_cast<double>(t.vcpus) / vpc);
  const double node_cores = std::max(1.0, t.node_vcpus / vpc);
  // The guest scheduler spreads runnable threads over idle physical cores before it pairs
  // hyperthreads; a core's second hyperthread adds no FMA or load ports.
  const double used = std::min(static_cast<double>(std::max(1, threads)), cores);
  const double eff = std::min(used, node_cores) + t.numa_efficiency * std::max(0.0, used - node_cores);
  return 1.0 / (t.serial_fraction + (1.0 - t.serial_fraction) / std::max(1.0, eff));
}

double eigen_cycles(const CpuThreading& t, double gemm_flops, double vector_flops, double bytes) {
  return gemm_flops / t.flops_per_cycle + vector_flops / t.lanes + bytes * 11.0 / 64.0;
}

int apply_cpu_threads(OpCost& c, const CpuThreading& t, double cycles) {
  const int threads = eigen_threads(cycles, t.grain_cycles, t.vcpus);
  const double full = thread_speedup(t, t.vcpus);
  c.compute_s *= full / thread_speedup(t, threads);
  c.overhead_s += t.sync_per_thread_s * threads;
  return threads;
}

}  // namespace xpusim::analytical
