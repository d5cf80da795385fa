// `xpusim list devices|systems|clusters|offers|studies|models|frameworks|datasets`: what a first-time user can
// name on the other commands, as a table or JSON. Offers come from configs/pricing/ plus a
// SkyPilot vms.csv given with --catalog (each mapped to its xpusim device and system), with
// their date, source and a warning for prices older than a year. The rows are built by
// costmodel/listings.hpp (shared with Python's xpusim.list); this file formats them.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "common/config_paths.hpp"
#include "common/error.hpp"
#include "common/output.hpp"
#include "common/records.hpp"
#include "costmodel/listings.hpp"

namespace xpusim::cli {

namespace {

namespace fs = std::filesystem;

struct ListArgs {
  std::string what, format = "table", catalog, region, output;
};

// A value as a table cell; a list (frameworks' names, engines, versions) joined with `sep`.
std::string cell(const nlohmann::json& v, const char* sep = ", ") {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_array()) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : sep) + cell(x, sep);
    return s;
  }
  return fmt_sig(v.get<double>(), 4);
}

}  // namespace

void register_list(CLI::App& app) {
  auto a = std::make_shared<ListArgs>();
  auto* cmd = app.add_subcommand("list", "list what can be named: devices, systems, clusters, offers, studies, models, frameworks, datasets");
  cmd->add_option("what", a->what, "devices | systems | clusters | offers | studies | models | frameworks | datasets")
      ->required()
      ->check(CLI::IsMember({"devices", "systems", "clusters", "offers", "studies", "models", "frameworks", "datasets"}));
  add_format_option(*cmd, a->format, "table|json|csv|markdown", "table");
  cmd->add_option("--catalog", a->catalog, "offers: a SkyPilot vms.csv to list instead of configs/pricing/");
  cmd->add_option("--region", a->region, "offers: only this region (default with --catalog: each instance's cheapest)");
  cmd->add_option("-o,--output", a->output, "write to FILE ('-' or absent: stdout)");
  cmd->callback([a] {
    OutputFormat f = parse_output_format(
        a->format, {OutputFormat::table, OutputFormat::json, OutputFormat::csv, OutputFormat::markdown});
    if ((!a->catalog.empty() || !a->region.empty()) && a->what != "offers")
      throw UserError("--catalog/--region: only for `list offers`");
    cost::ListingOptions lo;
    lo.catalog = a->catalog, lo.region = a->region;
    cost::Listing l = cost::list_rows(a->what, lo);
    const std::vector<std::string>& warnings = l.warnings;
    const nlohmann::json& rows = l.rows;
    const std::vector<std::string>& cols = l.table_columns;
    std::ofstream file;
    if (!a->output.empty() && a->output != "-") {
      file.open(a->output);
      if (!file) throw UserError(a->output + ": cannot write (-o)");
    }
    std::ostream& os = file.is_open() ? static_cast<std::ostream&>(file) : std::cout;
    for (const auto& w : warnings) std::cerr << "xpusim: warning: " << w << "\n";
    if (f == OutputFormat::json) {
      print_json_document(os, {{a->what, rows}});
    } else if (f == OutputFormat::csv) {
      // A list (a framework's names, engines, versions) is one cell, "a; b", not JSON text.
      nlohmann::json flat = rows;
      for (auto& r : flat)
        for (auto& [key, v] : r.items())
          if (v.is_array()) v = cell(v, "; ");
      print_csv_records(os, flat, {cols.front()});
    } else {
      Table t{cols};
      for (const auto& r : rows) {
        std::vector<std::string> line;
        for (const auto& c : cols) line.push_back(cell(r.value(c, nlohmann::json())));
        t.add(line);
      }
      t.print(os, f);
      if (rows.empty()) os << "(none in " << (fs::path(config_dir()) / a->what).string() << ")\n";
    }
  });
}

}  // namespace xpusim::cli
