// Profile inheritance (framework_base.hpp).
#include "engine/framework_base.hpp"

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

#include "common/config_paths.hpp"
#include "common/error.hpp"

namespace xpusim {

namespace fs = std::filesystem;

namespace {
// The keys a profile never takes from its base (framework_base.hpp).
const std::vector<std::string>& identity_keys() {
  static const std::vector<std::string> keys = {"name", "names", "versions", "description", "source", "calibrate", "base"};
  return keys;
}
}  // namespace

FrameworkBase add_framework_base(YAML::Node& root, const std::string& path,
                                 void (*parse)(const YAML::Node& base, const std::string& base_path)) {
  if (!root.IsMap() || !root["base"]) return {};
  const YAML::Node from = root["base"];
  const auto where = [&] { return path + ":" + std::to_string(from.Mark().line + 1) + ": base: "; };
  if (!from.IsScalar() || from.Scalar().empty() || from.Scalar().find('/') != std::string::npos)
    throw UserError(where() + "expected the file stem of a profile (pytorch_2)");
  const std::string name = from.Scalar();
  // Beside the profile first (a set of profiles kept together), then the shipped ones (a user's
  // own profile elsewhere, starting from pytorch_2).
  const fs::path beside = fs::path(path).parent_path() / (name + ".yaml");
  const fs::path shipped = fs::path(config_dir()) / "frameworks" / (name + ".yaml");
  std::error_code ec;
  const fs::path src = fs::is_regular_file(beside, ec) ? beside : shipped;
  if (!fs::is_regular_file(src, ec))
    throw UserError(where() + "no profile '" + name + "' beside this one or in " + (fs::path(config_dir()) / "frameworks").string());
  if (fs::weakly_canonical(src, ec) == fs::weakly_canonical(path, ec))
    throw UserError(where() + "a profile cannot be its own base");
  const YAML::Node base = load_config_yaml(src.string());
  if (base.IsMap() && base["base"])
    throw UserError(where() + "'" + name + "' has a base of its own; name the profile it starts from (" +
                    base["base"].as<std::string>("?") + ")");
  parse(base, src.string());  // an error in the base names the base's file and line
  // In place and uncloned: YAML::Clone drops the marks that the profile's own errors name lines by.
  const auto& identity = identity_keys();
  FrameworkBase taken{src.string(), {}};
  for (const auto& kv : base) {
    const std::string key = kv.first.Scalar();  // the base parsed, so every key is a scalar
    if (std::find(identity.begin(), identity.end(), key) != identity.end() || std::as_const(root)[key]) continue;
    root[key] = kv.second;
    taken.keys.push_back(key);
  }
  return taken;
}

}  // namespace xpusim
