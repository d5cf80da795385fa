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
  int64_t memory_bytes = 0; // MemTotal; 0 when unknown
  int64_t llc_bytes = 0;    // the highest cache level's size (sysfs cpu0/cache); 0 when unknown
};

// "32768K" / "1M" / "512" (bytes) as in sysfs cache/indexN/size; 0 when unparsable.
int64_t parse_cache_size(const std::string& text);

// Parses /proc/cpuinfo text (x86 layout; other layouts yield 1 core, no SIMD flags).
HostCpuInfo parse_cpuinfo(const std::string& cpuinfo_text);
// Reads the live files; missing files leave the fields at their defaults.
HostCpuInfo detect_host_cpu();

}  // namespace xpusim::analytical
