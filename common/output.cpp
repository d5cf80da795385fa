#include "common/output.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "common/error.hpp"

namespace xpusim {

OutputFormat parse_output_format(const std::string& s, const std::vector<OutputFormat>& allowed) {
  OutputFormat f;
  if (s == "table" || s == "text") f = OutputFormat::table;
  else if (s == "json") f = OutputFormat::json;
  else if (s == "csv") f = OutputFormat::csv;
  else if (s == "markdown" || s == "md") f = OutputFormat::markdown;
  else f = static_cast<OutputFormat>(-1);
  bool ok = std::find(allowed.begin(), allowed.end(), f) != allowed.end();
  if (!ok) {
    std::string list;
    // Appended piecewise: `"|" + std::string(...)` trips GCC 12's -Wrestrict false positive
    // inside libstdc++'s operator+ (the first build's only warning).
    for (auto a : allowed) {
      if (!list.empty()) list += '|';
      list += output_format_name(a);
    }
    throw FieldError("format", "'" + s + "' is not one of " + list);
  }
  return f;
}

const char* output_format_name(OutputFormat f) {
  switch (f) {
    case OutputFormat::table: return "table";
    case OutputFormat::json: return "json";
    case OutputFormat::csv: return "csv";
    case OutputFormat::markdown: return "markdown";
  }
  return "?";
}

static bool looks_numeric(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end && (*end == '\0' || *end == '%' || *end == ' ');
}

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

// A table cell for reading: a decimal number written with more than 6 significant digits
// (a double printed in full, 0.02943960000000015) shows 6; integers and text stay as they
// are. CSV keeps the exact text.
static std::string readable_cell(const std::string& s) {
  if (s.empty() || s.find_first_of(".eE") == std::string::npos) return s;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (!end || *end != '\0' || !std::isfinite(v)) return s;
  int digits = 0;
  bool leading = true;
  for (char c : s) {
    if (c == 'e' || c == 'E') break;
    if (c < '0' || c > '9') continue;
    if (leading && c == '0') continue;
    leading = false;
    ++digits;
  }
  if (digits <= 6) return s;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

static void print_table_exact(const Table& table, std::ostream& os, OutputFormat f);

void Table::print(std::ostream& os, OutputFormat f) const {
  if (f != OutputFormat::csv) {
    bool noisy = false;
    for (const auto& r : rows)
      for (const auto& c : r) noisy = noisy || readable_cell(c) != c;
    if (noisy) {
      Table t = *this;
      for (auto& r : t.rows)
        for (auto& c : r) c = readable_cell(c);
      print_table_exact(t, os, f);
      return;
    }
  }
  print_table_exact(*this, os, f);
}

// Every cell as given.
static void print_table_exact(const Table& table, std::ostream& os, OutputFormat f) {
  const auto& columns = table.columns;
  const auto& rows = table.rows;
  const auto& right_align = table.right_align;
  if (f == OutputFormat::csv) {
    for (size_t i = 0; i < columns.size(); ++i) os << (i ? "," : "") << csv_escape(columns[i]);
    os << "\n";
    for (const auto& r : rows) {
      for (size_t i = 0; i < r.size(); ++i) os << (i ? "," : "") << csv_escape(r[i]);
      os << "\n";
    }
    return;
  }
  std::vector<size_t> w(columns.size(), 0);
  std::vector<bool> right(columns.size(), true);
  for (size_t i = 0; i < columns.size(); ++i) w[i] = columns[i].size();
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) {
      w[i] = std::max(w[i], r[i].size());
      if (!r[i].empty() && r[i] != "-" && !looks_numeric(r[i])) right[i] = false;
    }
  if (right_align.size() == columns.size()) right = right_align;
  auto cell = [&](const std::string& s, size_t i) {
    std::string pad(w[i] - std::min(w[i], s.size()), ' ');
    return right[i] ? pad + s : s + pad;
  };
  if (f == OutputFormat::markdown) {
    os << "|";
    for (size_t i = 0; i < columns.size(); ++i) os << " " << cell(columns[i], i) << " |";
    os << "\n|";
    for (size_t i = 0; i < columns.size(); ++i) os << std::string(w[i] + 1, '-') << (right[i] ? ":" : "-") << "|";
    os << "\n";
    for (const auto& r : rows) {
      os << "|";
      for (size_t i = 0; i < columns.size(); ++i) os << " " << cell(i < r.size() ? r[i] : "", i) << " |";
      os << "\n";
    }
    return;
  }
  // Plain text: two spaces between columns, no trailing blanks.
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (size_t i = 0; i < columns.size(); ++i) s += (i ? "  " : "") + cell(i < r.size() ? r[i] : "", i);
    while (!s.empty() && s.back() == ' ') s.pop_back();
    os << s << "\n";
  };
  line(columns);
  std::vector<std::string> rule;
  for (size_t i = 0; i < columns.size(); ++i) rule.push_back(std::string(w[i], '-'));
  line(rule);
  for (const auto& r : rows) line(r);
}

std::string fmt_sig(double v, int significant) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  if (v == 0) return "0";
  char buf[64];
  double a = std::fabs(v);
  if (a >= 1e15 || a < 1e-4) {
    std::snprintf(buf, sizeof buf, "%.*e", significant - 1, v);
  } else {
    int digits = static_cast<int>(std::floor(std::log10(a))) + 1;
    int decimals = std::max(0, significant - digits);
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  }
  return buf;
}

std::string fmt_fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string fmt_g(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", precision, v);
  return buf;
}

std::string fmt_int(long long v) { return std::to_string(v); }

std::string fmt_bytes(long long b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (std::fabs(v) >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return buf;
}

void print_json(std::ostream& os, const nlohmann::json& j) { os << j.dump(2) << "\n"; }

}  // namespace xpusim
