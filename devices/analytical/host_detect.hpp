// Detects this machine's CPU for the `host` device: logical CPUs, physical cores, sockets,
// SIMD ISA and frequency, from /proc/cpuinfo, /proc/meminfo and sysfs cpufreq. Parsing is
// split from file reading so tests can feed a known /proc/cpuinfo text.
#pragma once
#include <cstdint>
#include <string>

namespace xpusim::analytical {

struct HostCpuInfo {
  int logical_cpus = 1;
  int physical_cores = 1;
  int sockets = 1;
  double max_ghz = 0;       // 0 when unknown
  bool avx = false, avx2 = false, fma = false, avx512f = false;
  std::string vendor;       // vendor_id: GenuineIntel, AuthenticAMD; empty when unknown
  int family = -1;          // cpu family (decimal, as /proc/cpuinfo prints it); -1 when unknown
  int model = -1;           // model number within the family; -1 when unknown
  std::string model_name;   // "model name" (often masked in VMs, e.g. "AMD EPYC")
  int64_t memory_bytes = 0; // MemTotal; 0 when unknown
  int64_t llc_bytes = 0;    // the highest cache level's size (sysfs cpu0/cache); 0 when unknown
};

// Width in bits of the vector units that execute fp32 FMAs, which sets the peak rate (lanes x
// FMA pipes), not the widest ISA the flags allow. AMD Zen 4 (family 25 with AVX-512) runs a
// 512-bit instruction as two halves on its 256-bit FMA pipes (AMD's Software Optimization
// Guide for Family 19h, Zen 4 section), so its fp32 peak per clock is AVX2's; Zen 5 (family 26)
// and Intel's AVX-512 cores have 512-bit units. An Intel part with one 512-bit FMA port (Xeon
// Bronze/Silver, some Gold 5xxx) cannot be told from CPUID: set compiled_fma_units=1.
int simd_datapath_bits(const HostCpuInfo& h);

// One line for reports and measured rows: "AuthenticAMD family 25 model 17 (AMD EPYC),
// 2 logical CPUs, 2 cores, 1 socket, 2.596 GHz, AVX-512+FMA on 256-bit units".
std::string describe_host_cpu(const HostCpuInfo& h);

// "32768K" / "1M" / "512" (bytes) as in sysfs cache/indexN/size; 0 when unparsable.
int64_t parse_cache_size(const std::string& text);

// Parses /proc/cpuinfo text (x86 layout; other layouts yield 1 core, no SIMD flags).
HostCpuInfo parse_cpuinfo(const std::string& cpuinfo_text);
// Reads the live files; missing files leave the fields at their defaults.
HostCpuInfo detect_host_cpu();

}  // namespace xpusim::analytical
