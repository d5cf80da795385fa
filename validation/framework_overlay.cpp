#include "validation/framework_overlay.hpp"

#include <filesystem>

#include "common/config_paths.hpp"
#include "common/error.hpp"
#include "engine/framework_spec.hpp"
#include "predict/predict.hpp"

namespace xpusim::validation {

std::string framework_overlay_stem(const std::string& overlay_device) {
  static const std::string prefix = "framework ";
  if (overlay_device.rfind(prefix, 0) != 0) return "";
  return std::filesystem::path(overlay_device.substr(prefix.size())).stem().string();
}

std::vector<std::string> framework_overlay_for(const std::map<std::string, std::vector<std::string>>& by_stem,
                                               const ReferenceRow& row, const std::string& forced) {
  if (by_stem.empty()) return {};
  const std::string name = forced.empty() ? row.framework : forced;
  if (name.empty()) return {};
  std::string path;
  try {
    path = find_framework_file(name, engine_for_device(row.device), forced.empty() ? row.stack_version() : "");
  } catch (const UserError&) {
    return {};  // no profile: the row is skipped by the prediction, which says why
  }
  std::vector<std::string> out;
  for (const auto& kv : profile_overrides(path, by_stem)) out.push_back("framework." + kv);
  return out;
}

std::vector<std::string> profile_overrides(const std::string& path,
                                           const std::map<std::string, std::vector<std::string>>& by_stem) {
  std::vector<std::string> out;
  if (path.empty() || by_stem.empty()) return out;
  const YAML::Node n = load_config_yaml(path);
  if (n.IsMap() && n["base"] && n["base"].IsScalar()) {
    auto b = by_stem.find(n["base"].Scalar());
    if (b != by_stem.end())
      for (const auto& kv : b->second)
        if (!n[kv.substr(0, kv.find('='))]) out.push_back(kv);
  }
  auto it = by_stem.find(std::filesystem::path(path).stem().string());
  if (it != by_stem.end()) out.insert(out.end(), it->second.begin(), it->second.end());
  return out;
}

}  // namespace xpusim::validation
