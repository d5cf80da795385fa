// Nearest known names for "did you mean" (see suggest.hpp).
#include "common/suggest.hpp"

#include <algorithm>
#include <cctype>

namespace xpusim {

namespace {
std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Levenshtein distance (insert, delete, substitute: 1 each), two rows of the table.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

std::vector<std::string> closest_names(const std::string& name_in, const std::vector<std::string>& known, size_t max) {
  const std::string name = lower(name_in);
  if (name.empty()) return {};
  // Score: containment ranks first (0), then edit distance; a typo may cost up to a third of
  // the name's length (at least 2), more than that is a different name.
  const size_t limit = std::max<size_t>(2, name.size() / 3);
  std::vector<std::pair<size_t, std::string>> scored;
  for (const auto& k : known) {
    const std::string lk = lower(k);
    if (lk == name) continue;
    if (lk.find(name) != std::string::npos) {
      scored.push_back({0, k});
      continue;
    }
    size_t d = edit_distance(name, lk);
    if (d <= limit) scored.push_back({d, k});
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && out.size() < max; ++i) out.push_back(scored[i].second);
  return out;
}

std::string did_you_mean(const std::string& name, const std::vector<std::string>& known) {
  auto c = closest_names(name, known);
  if (c.empty()) return "";
  std::string s;
  for (const auto& n : c) s += (s.empty() ? "" : ", ") + n;
  return "did you mean " + s + "?";
}

std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s;
}

}  // namespace xpusim
