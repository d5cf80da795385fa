// TPU slice names as clusters (tpu_cluster.hpp).
#include "parallel/tpu_cluster.hpp"

#include <filesystem>

#include "common/config_paths.hpp"

namespace xpusim::parallel {

namespace {

bool digits(const std::string& s) {
  return !s.empty() && s.size() <= 9 && s.find_first_not_of("0123456789") == std::string::npos;
}

// "v5e", "v4", "v6e": a 'v', a digit, then letters or digits (no separators).
bool generation_token(const std::string& g) {
  if (g.size() < 2 || g.size() > 8 || g[0] != 'v' || g[1] < '0' || g[1] > '9') return false;
  return g.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789") == std::string::npos;
}

bool device_exists(const std::string& device) {
  std::error_code ec;
  return std::filesystem::exists(resolve_config("devices", device), ec);
}

}  // namespace

std::optional<TpuClusterName> parse_tpu_cluster_name(const std::string& name) {
  if (name.find('/') != std::string::npos || name.ends_with(".yaml")) return std::nullopt;
  TpuClusterName t;
  std::string gen, num;
  const std::string suffix = "_multislice";
  if (name.rfind("tpu_", 0) == 0 && name.ends_with(suffix)) {
    const std::string mid = name.substr(4, name.size() - 4 - suffix.size());  // v5e_256
    const size_t us = mid.rfind('_');
    if (us == std::string::npos) return std::nullopt;
    gen = mid.substr(0, us), num = mid.substr(us + 1);
    t.multislice = true;
  } else {
    const size_t dash = name.rfind('-');
    if (dash == std::string::npos) return std::nullopt;
    gen = name.substr(0, dash), num = name.substr(dash + 1);
    // Cloud TPU's accelerator type for v5e (v5litepod-256) names the same slices.
    if (gen == "v5litepod") gen = "v5e";
  }
  if (!generation_token(gen) || !digits(num)) return std::nullopt;
  t.device = "tpu_" + gen;
  if (!device_exists(t.device)) return std::nullopt;
  t.slice = gen + "-" + num;
  return t;
}

}  // namespace xpusim::parallel
