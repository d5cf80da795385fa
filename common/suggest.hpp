// "Did you mean ...?" for a mistyped name: the known names closest to it by edit distance,
// plus those that start with it or contain it (`--device a100` -> a100_pcie_40gb, ...), and the
// joined list of known names such messages end with.
#pragma once
#include <string>
#include <vector>

namespace xpusim {

// Up to `max` candidates, closest first (ties by name); empty when none is close.
std::vector<std::string> closest_names(const std::string& name, const std::vector<std::string>& known, size_t max = 3);
// "did you mean X, Y?" or "" when nothing is close; for adding to an error message.
std::string did_you_mean(const std::string& name, const std::vector<std::string>& known);
// "a, b, c": the list of known names an error message ends with.
std::string join_names(const std::vector<std::string>& names);

}  // namespace xpusim
