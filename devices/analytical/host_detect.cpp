#include "devices/analytical/host_detect.hpp"

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

namespace xpusim::analytical {

namespace {
std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}
int parse_int(const std::string& s) {
  try {
    return std::stoi(s);
  } catch (...) {
    return -1;
  }
}
}  // namespace

int simd_datapath_bits(const HostCpuInfo& h) {
  if (h.avx512f) return h.vendor == "AuthenticAMD" && h.family == 25 ? 256 : 512;
  return h.avx ? 256 : 128;
}

std::string describe_host_cpu(const HostCpuInfo& h) {
  std::ostringstream o;
  o << (h.vendor.empty() ? std::string("unknown vendor") : h.vendor);
  if (h.family >= 0) o << " family " << h.family;
  if (h.model >= 0) o << " model " << h.model;
  if (!h.model_name.empty()) o << " (" << h.model_name << ")";
  o << ", " << h.logical_cpus << " logical CPUs, " << h.physical_cores << (h.physical_cores == 1 ? " core, " : " cores, ")
    << h.sockets << (h.sockets == 1 ? " socket" : " sockets");
  if (h.max_ghz > 0) {
    char ghz[32];
    std::snprintf(ghz, sizeof ghz, "%.3f", h.max_ghz);
    o << ", " << ghz << " GHz";
  }
  const char* isa = h.avx512f ? "AVX-512" : h.avx2 ? "AVX2" : h.avx ? "AVX" : "SSE";
  o << ", " << isa << (h.fma ? "+FMA" : "") << " on " << simd_datapath_bits(h) << "-bit units";
  return o.str();
}

HostCpuInfo parse_cpuinfo(const std::string& text) {
  HostCpuInfo h;
  std::istringstream in(text);
  int logical = 0;
  std::set<std::string> sockets;
  std::set<std::pair<std::string, std::string>> cores;  // (physical id, core id)
  std::string phys = "0", line, flags;
  double mhz_max = 0;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = trim(line.substr(0, colon)), val = trim(line.substr(colon + 1));
    if (key == "processor") ++logical;
    else if (key == "physical id") { phys = val; sockets.insert(val); }
    else if (key == "core id") cores.insert({phys, val});
    else if (key == "cpu MHz") { try { mhz_max = std::max(mhz_max, std::stod(val)); } catch (...) {} }
    else if (key == "flags" && flags.empty()) flags = " " + val + " ";
    else if (key == "vendor_id" && h.vendor.empty()) h.vendor = val;
    else if (key == "model name" && h.model_name.empty()) h.model_name = val;
    else if (key == "cpu family" && h.family < 0) h.family = parse_int(val);
    else if (key == "model" && h.model < 0) h.model = parse_int(val);
  }
  h.logical_cpus = std::max(1, logical);
  h.sockets = std::max<int>(1, static_cast<int>(sockets.size()));
  // VMs often hide core ids; then every logical CPU counts as a core.
  h.physical_cores = cores.empty() ? h.logical_cpus : static_cast<int>(cores.size());
  h.max_ghz = mhz_max / 1000.0;
  auto has = [&](const char* f) { return flags.find(std::string(" ") + f + " ") != std::string::npos; };
  h.avx = has("avx");
  h.avx2 = has("avx2");
  h.fma = has("fma");
  h.avx512f = has("avx512f");
  return h;
}

int64_t parse_cache_size(const std::string& text) {
  const std::string t = trim(text);
  size_t used = 0;
  long long v = 0;
  try { v = std::stoll(t, &used); } catch (...) { return 0; }
  const std::string unit = t.substr(used);
  if (unit.empty()) return v;
  if (unit == "K") return v * 1024;
  if (unit == "M") return v * 1024 * 1024;
  return 0;
}

HostCpuInfo detect_host_cpu() {
  HostCpuInfo h = parse_cpuinfo(read_file("/proc/cpuinfo"));
  if (h.logical_cpus <= 1) h.logical_cpus = std::max(1u, std::thread::hardware_concurrency());
  // cpufreq's maximum is the turbo limit; "cpu MHz" is only the current clock.
  std::string khz = trim(read_file("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"));
  if (!khz.empty()) {
    try { h.max_ghz = std::stod(khz) / 1e6; } catch (...) {}
  }
  // The last-level cache: the highest `level` among cpu0's cache indices.
  int best = 0;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::string level = trim(read_file(dir + "level"));
    if (level.empty()) continue;
    int lv = 0;
    try { lv = std::stoi(level); } catch (...) { continue; }
    if (lv > best) {
      best = lv;
      h.llc_bytes = parse_cache_size(read_file(dir + "size"));
    }
  }
  std::istringstream mem(read_file("/proc/meminfo"));
  std::string key;
  long long kb = 0;
  while (mem >> key >> kb) {
    if (key == "MemTotal:") { h.memory_bytes = kb * 1024; break; }
    std::string rest;
    std::getline(mem, rest);
  }
  return h;
}

}  // namespace xpusim::analytical
