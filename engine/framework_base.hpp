// Profile inheritance: a framework profile that is another stack run differently (the same
// PyTorch 2.x with its model in channels-last memory) names that profile as `base:` and sets
// only what differs, so the shared constants live in one file and a refit of the base reaches
// both (configs/frameworks/, docs/frameworks.md).
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace xpusim {

// Adds to `root` (the profile at `path`) every key it does not set from the profile its
// `base` names: a file stem, the profile beside `path` if there is one, else the config
// directory's (configs/frameworks/STEM.yaml). The base is parsed on
// its own first, so an error in it names its own file and line; a base that has a base of its
// own is refused (one level keeps every constant one file away). The base's identity is never
// taken: what names and documents it (name, names, versions, description, source), what a
// calibration fits in it (calibrate), and `base`. Without `base`, nothing changes.
// `parse` checks the base the way a profile is checked (framework_spec.cpp passes its parser).
// Returns the base's file and the keys taken from it (none without `base`), so that a check
// across fields that fails on a taken value can name the base's file (SpecReader::taken_from).
struct FrameworkBase {
  std::string path;
  std::vector<std::string> keys;
};
FrameworkBase add_framework_base(YAML::Node& root, const std::string& path,
                                 void (*parse)(const YAML::Node& base, const std::string& base_path));

}  // namespace xpusim
