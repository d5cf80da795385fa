// Output formats shared by every command: aligned text tables, CSV, Markdown and JSON.
// Numbers are printed with a fixed, locale-independent format so that output is
// byte-identical for identical inputs.
#pragma once
#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace xpusim {

enum class OutputFormat { table, json, csv, markdown };
// Parses --format; `allowed` lists the formats a command supports. Throws UserError.
OutputFormat parse_output_format(const std::string& s, const std::vector<OutputFormat>& allowed);
const char* output_format_name(OutputFormat f);

struct Table {
  Table() = default;
  explicit Table(std::vector<std::string> cols) : columns(std::move(cols)) {}
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> right_align;  // per column; default: numbers right-aligned by content

  void add(std::vector<std::string> row) { rows.push_back(std::move(row)); }
  void print(std::ostream& os, OutputFormat f) const;  // table, csv or markdown
};

// Number formatting helpers (fixed significant digits, no locale).
std::string fmt_sig(double v, int significant = 4);
std::string fmt_fixed(double v, int decimals);
std::string fmt_g(double v, int precision);    // printf %.*g: 17 round-trips a double
std::string fmt_int(long long v);           // 25557032
std::string fmt_bytes(long long bytes);      // 1.23 GiB
std::string csv_escape(const std::string& s);  // common/csv.hpp, the one CSV writer
// Escapes &, <, > and " for XML/HTML text and attributes (SVG charts, HTML reports).
std::string xml_escape(const std::string& s);

// Writes JSON with 2-space indentation and a trailing newline.
void print_json(std::ostream& os, const nlohmann::json& j);

}  // namespace xpusim
