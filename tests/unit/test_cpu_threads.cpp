// The CPU thread-pool model (devices/analytical/cpu_threads.hpp): Eigen's threads per op, their
// placement on physical cores and NUMA nodes, the fork/join per woken thread, and an LSTM's
// timesteps sized on their own small contractions. Numbers derived by hand below.
#include <catch2/catch.hpp>

#include "devices/analytical/cpu_threads.hpp"
#include "devices/analytical/device_spec.hpp"
#include "devices/analytical/op_cost.hpp"
#include "devices/analytical/rates.hpp"
#include "models/builder.hpp"
#include "models/work.hpp"

using namespace xpusim;
using namespace xpusim::analytical;

namespace {
// A 2-socket machine of 24 cores x 2 hyperthreads per socket (the GCE Skylake host).
DeviceSpec skylake(bool balanced) {
  DeviceSpec d;
  d.kind = DeviceKind::cpu;
  d.vcpus_per_core = 2;
  d.vcpus_per_socket = 48;
  d.max_vcpus = 96;
  d.numa_efficiency = 0;
  d.serial_fraction = 0;
  d.frequency_ghz = 2.0;
  d.numa_balanced_vm = balanced;
  d.thread_grain_cycles = 100000;
  d.op_overhead_per_vcpu_us = 4;
  return d;
}
}  // namespace

TEST_CASE("Eigen's numThreads: one thread per 100k cycles beyond a 100k start-up", "[analytical][cpu]") {
  // (cycles - 100000) / 100000 + 0.9, truncated, clamped to [1, pool].
  CHECK(eigen_threads(50000, 100000, 64) == 1);     // -0.5 + 0.9 = 0.4 -> 1
  CHECK(eigen_threads(210000, 100000, 64) == 2);    // 1.1 + 0.9 = 2.0 -> 2
  CHECK(eigen_threads(205000, 100000, 64) == 1);    // 1.05 + 0.9 = 1.95 -> 1
  CHECK(eigen_threads(750000, 100000, 64) == 7);    // 6.5 + 0.9 = 7.4 -> 7
  CHECK(eigen_threads(1e9, 100000, 64) == 64);      // the pool caps it
  CHECK(eigen_threads(10, 0, 32) == 32);            // grain 0: every op on the whole pool
}

TEST_CASE("Eigen's cost of an op: FLOPs at the build's peak, elements per lane, 11/64 cycle per byte", "[analytical][cpu]") {
  CpuThreading t;
  t.flops_per_cycle = 32;  // AVX2 + 2 FMA pipes
  t.lanes = 8;
  // 3.2e6 GEMM FLOPs / 32 = 100000; 8000 vector FLOPs / 8 = 1000; 6400 bytes x 11/64 = 1100.
  CHECK(eigen_cycles(t, 3.2e6, 8000, 6400) == Approx(102100));
}

TEST_CASE("threads on a VM: cores first, hyperthreads add nothing, the second NUMA node at numa_efficiency", "[analytical][cpu]") {
  // 64 vCPUs filling the first 48-vCPU socket: 24 first-socket cores + 8 worth 0.
  const CpuThreading fill = make_cpu_threading(skylake(false), 64, 8, 32);
  CHECK(fill.node_vcpus == Approx(48));
  CHECK(thread_speedup(fill, 64) == Approx(24));
  // Balanced: 32 vCPUs (16 cores) per node, so 64 vCPUs compute like 32.
  const CpuThreading bal = make_cpu_threading(skylake(true), 64, 8, 32);
  CHECK(bal.node_vcpus == Approx(32));
  CHECK(thread_speedup(bal, 64) == Approx(16));
  CHECK(thread_speedup(make_cpu_threading(skylake(true), 32, 8, 32), 32) == Approx(16));
  // 7 threads run on 7 distinct cores; 40 threads on a 16-vCPU VM get its 8 cores.
  CHECK(thread_speedup(bal, 7) == Approx(7));
  CHECK(thread_speedup(make_cpu_threading(skylake(true), 16, 8, 32), 40) == Approx(8));
  // A second node worth 0.5: 16 + 0.5 x 16 = 24; Amdahl 0.1 with 8 threads on 8 distinct
  // cores: 1 / (0.1 + 0.9 / 8).
  DeviceSpec half = skylake(true);
  half.numa_efficiency = 0.5;
  CHECK(thread_speedup(make_cpu_threading(half, 64, 8, 32), 64) == Approx(24));
  half.serial_fraction = 0.1;
  CHECK(thread_speedup(make_cpu_threading(half, 64, 8, 32), 8) == Approx(1.0 / (0.1 + 0.9 / 8)));
}

TEST_CASE("an op re-priced on Eigen's threads pays their fork/join", "[analytical][cpu]") {
  const CpuThreading t = make_cpu_threading(skylake(true), 32, 8, 32);  // 16 cores, 4 us per thread
  OpCost c;
  c.compute_s = 1e-3;  // priced on all 16 cores
  // 750000 cycles -> 7 threads on 7 cores: 1 ms x 16 / 7; fork/join 7 x 4 us.
  CHECK(apply_cpu_threads(c, t, 750000) == 7);
  CHECK(c.compute_s == Approx(16e-3 / 7));
  CHECK(c.overhead_s == Approx(28e-6));
  OpCost big;
  big.compute_s = 1e-3;
  CHECK(apply_cpu_threads(big, t, 1e9) == 32);  // the whole pool: 32 threads on 16 cores
  CHECK(big.compute_s == Approx(1e-3));
  CHECK(big.overhead_s == Approx(128e-6));
}

TEST_CASE("make_rates: with the thread-pool model the per-vCPU cost moves from every op to the threads woken", "[analytical][cpu]") {
  DeviceSpec d = skylake(true);
  d.op_overhead_us = 30;
  d.compiled_isa = CpuIsa{8, 2};
  const Rates on = make_rates(d, Precision::fp32, CpuBuild::compiled, 32);
  CHECK(on.op_overhead_s == Approx(30e-6));
  CHECK(on.cpu.vcpus == 32);
  CHECK(on.cpu.flops_per_cycle == Approx(32));
  d.thread_grain_cycles = 0;
  const Rates off = make_rates(d, Precision::fp32, CpuBuild::compiled, 32);
  CHECK(off.op_overhead_s == Approx(30e-6 + 32 * 4e-6));
  CHECK(off.cpu.vcpus == 0);
  // Balanced 64 vCPUs: DRAM of 32 local vCPUs of a 48-vCPU socket, the remote half at
  // numa_efficiency 0: 128 GB/s x 0.6 x 32 / 48.
  d.memory_bandwidth_gbps = 128;
  d.memory_efficiency = 0.6;
  CHECK(make_rates(d, Precision::fp32, CpuBuild::compiled, 64).memory_bytes_s == Approx(128e9 * 0.6 * 32 / 48));
}

TEST_CASE("an LSTM on CPU threads: x.W hoisted on the pool, each timestep's h.U sized on its own work", "[analytical][cpu]") {
  // Batch 128, 40 timesteps, 57 inputs, 128 units (the Nietzsche text-generation LSTM).
  OpGraph g;
  ModelBuilder b(g, 128, Precision::fp32);
  b.lstm(b.feature_input("x", 40, 57), 128, false, false, "lstm");
  count_all_work(g);
  int op = -1;
  for (int i = 0; i < g.num_ops(); ++i)
    if (g.op(i).kind == OpKind::LSTM) op = i;
  REQUIRE(op >= 0);
  const double flops = g.op(op).work.flops;
  Rates r;
  r.gemm_flops_s = 1.6e11;  // 16 cores x 1e10 FLOP/s
  r.memory_bytes_s = 1e15;
  r.transcendental_flops = 0;
  r.op_overhead_s = 0;
  r.recurrent_step_s = 0;
  r.cpu = make_cpu_threading(skylake(true), 32, 8, 32);  // 16 cores, 4 us per woken thread
  const double rec = 128.0 / (57 + 128), hoisted = flops * (1 - rec) / 1.6e11;
  // Keras' 4 dots per timestep: 2 x 128 x 128 x 128 = 4.19e6 FLOPs = 131072 cycles at 32 per
  // cycle, plus a few bytes: 1 thread (1.21 -> 1). The recurrent share runs on 1 core instead
  // of 16; x.W (2.6e8 FLOPs) takes the whole pool. Fork/join: 2 kernels x 40 steps x 1 thread
  // x 4 us, plus the hoisted contraction's 32 threads x 4 us.
  r.cpu.gate_gemms = 4;
  OpCost four = OpCostModel(r).visit(g, op);
  CHECK(four.compute_s == Approx(hoisted + 16 * flops * rec / 1.6e11));
  CHECK(four.overhead_s == Approx(2 * 40 * 4e-6 + 32 * 4e-6));
  // One fused dot per timestep: 524288 cycles -> 5 threads on 5 cores.
  r.cpu.gate_gemms = 1;
  OpCost one = OpCostModel(r).visit(g, op);
  CHECK(one.compute_s == Approx(hoisted + 16.0 / 5 * flops * rec / 1.6e11));
  CHECK(one.overhead_s == Approx(2 * 40 * 5 * 4e-6 + 32 * 4e-6));
}
