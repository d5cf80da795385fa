// A framework profile's calibration overlay (`xpusim calibrate --framework X --out FILE`,
// whose `device:` reads "framework X") applied by `xpusim validate --calibration FILE`: its
// constants reach, as framework.KEY=VALUE overrides, the rows that profile predicts and no
// other row (a device shared with another profile's rows keeps that profile's constants),
// except the profiles that name X as their `base:`, which take X's fitted values for the keys
// they do not set themselves, as they take X's file values.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "validation/reference_csv.hpp"

namespace xpusim::validation {

// "framework X" -> the stem of profile X (a configs/frameworks/ name or a YAML path); "" when
// the label is not a framework fit's.
std::string framework_overlay_stem(const std::string& overlay_device);

// The values `by_stem` (profile stem -> KEY=VALUE) holds for the profile at `path`, KEY=VALUE:
// its base's, for the keys the profile does not set itself (as it takes the base's file
// values), then its own (later entries win). Leave-one-study-out passes a round's refits.
std::vector<std::string> profile_overrides(const std::string& path,
                                           const std::map<std::string, std::vector<std::string>>& by_stem);

// The overrides of `by_stem` (profile stem -> KEY=VALUE) for the profile that predicts `row`:
// `forced` (validate --framework) when set, else the row's framework name and stack version.
std::vector<std::string> framework_overlay_for(const std::map<std::string, std::vector<std::string>>& by_stem,
                                               const ReferenceRow& row, const std::string& forced);

}  // namespace xpusim::validation
