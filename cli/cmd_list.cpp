// `xpusim list devices|systems|clusters|offers|studies|models`: what a first-time user can
// name on the other commands, as a table or JSON. Offers come from configs/pricing/ plus a
// SkyPilot vms.csv given with --catalog (each mapped to its xpusim device and system), with
// their date, source and a warning for prices older than a year.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>

#include "cli/commands.hpp"
#include "common/config_paths.hpp"
#include "common/error.hpp"
#include "common/output.hpp"
#include "common/records.hpp"
#include "costmodel/pricing.hpp"
#include "costmodel/pricing_skypilot.hpp"
#include "models/zoo.hpp"

namespace xpusim::cli {

namespace {

namespace fs = std::filesystem;

struct ListArgs {
  std::string what, format = "table", catalog, region, output;
};

// The description of a config file: its `description:` key, else its first comment line.
std::string config_description(const fs::path& p) {
  try {
    YAML::Node n = load_config_yaml(p.string());
    if (n.IsMap() && n["description"] && n["description"].IsScalar()) return n["description"].Scalar();
  } catch (const std::exception&) {
    // A file that does not parse still lists by name; the command that loads it reports why.
  }
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("# ", 0) == 0) return line.substr(2);
  return "";
}

nlohmann::json list_config_dir(const std::string& kind) {
  nlohmann::json arr = nlohmann::json::array();
  std::error_code ec;
  fs::path dir = fs::path(config_dir()) / kind;
  if (!fs::is_directory(dir, ec)) return arr;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) arr.push_back({{"name", f.stem().string()}, {"description", config_description(f)}});
  return arr;
}

nlohmann::json list_models() {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& m : load_zoo())
    arr.push_back({{"name", m.name}, {"description", m.description.empty() ? m.family : m.description}});
  return arr;
}

nlohmann::json price_or_null(const cost::PriceCatalog& cat, const std::string& id, cost::PricingTier t) {
  return cat.has_price(id, t) ? nlohmann::json(cat.usd_per_h(id, t)) : nlohmann::json();
}

nlohmann::json list_offers(const ListArgs& a, std::vector<std::string>& warnings) {
  // Without --catalog: configs/pricing/ plus any catalog given globally (--catalog before the
  // command, $XPUSIM_CATALOG).
  cost::PriceCatalog cat = a.catalog.empty() ? cost::default_price_catalog()
                                             : cost::load_skypilot_catalog(a.catalog, a.region);
  if (a.catalog.empty() && !a.region.empty())
    for (auto it = cat.offers.begin(); it != cat.offers.end();)
      it = it->second.region == a.region ? std::next(it) : cat.offers.erase(it);
  const std::string today = cost::today_utc();
  std::map<std::string, std::pair<int, std::string>> stale;  // catalog + date -> (offers, warning)
  std::error_code ec;
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& [id, o] : cat.offers) {
    std::string device;
    int count = 0;
    for (const auto& c : o.contains)
      if (c.what != "vcpu") {
        device = c.what;
        count = c.count;
        break;
      }
    // A device with no config cannot be simulated yet; say so instead of failing later.
    const bool known = device.empty() || fs::exists(resolve_config("devices", device), ec);
    auto age = cost::price_age_days(o.date, today);
    std::string warning = cost::stale_price_warning(o, today);
    if (!warning.empty()) {
      // One line per catalog and date, not per offer: "aws_2018 (5 offers): prices dated ...".
      const std::string catalog = id.substr(0, id.find('/'));
      auto& [count, line] = stale[catalog + "\n" + o.date];
      ++count;
      line = catalog + ": prices dated " + o.date + " are " + std::to_string(age.value_or(0)) + " days old (> " +
             std::to_string(cost::kStalePriceDays) + "); re-check " + o.source;
    }
    using cost::PricingTier;
    arr.push_back({{"offer", id},
                   {"provider", o.provider},
                   {"region", o.region},
                   {"device", device},
                   {"device_known", known},
                   {"count", count},
                   {"system", o.system},
                   {"on_demand_usd_per_h", price_or_null(cat, id, PricingTier::on_demand)},
                   {"spot_usd_per_h", price_or_null(cat, id, PricingTier::preemptible)},
                   {"reserved_1y_usd_per_h", price_or_null(cat, id, PricingTier::reserved_1y)},
                   {"reserved_3y_usd_per_h", price_or_null(cat, id, PricingTier::reserved_3y)},
                   {"capacity_block_usd_per_h", price_or_null(cat, id, PricingTier::capacity_block)},
                   {"owned_usd_per_h", price_or_null(cat, id, PricingTier::owned)},
                   {"date", o.date},
                   {"age_days", age ? nlohmann::json(*age) : nlohmann::json()},
                   {"stale", !warning.empty()},
                   {"source", o.source}});
  }
  for (const auto& [key, cw] : stale) {
    const std::string& line = cw.second;
    const size_t colon = line.find(':');
    warnings.push_back(line.substr(0, colon) + " (" + std::to_string(cw.first) + (cw.first == 1 ? " offer" : " offers") +
                       ")" + line.substr(colon));
  }
  return arr;
}

std::string cell(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  return fmt_sig(v.get<double>(), 4);
}

}  // namespace

void register_list(CLI::App& app) {
  auto a = std::make_shared<ListArgs>();
  auto* cmd = app.add_subcommand("list", "list what can be named: devices, systems, clusters, offers, studies, models");
  cmd->add_option("what", a->what, "devices | systems | clusters | offers | studies | models")
      ->required()
      ->check(CLI::IsMember({"devices", "systems", "clusters", "offers", "studies", "models"}));
  add_format_option(*cmd, a->format, "table|json|csv|markdown", "table");
  cmd->add_option("--catalog", a->catalog, "offers: a SkyPilot vms.csv to list instead of configs/pricing/");
  cmd->add_option("--region", a->region, "offers: only this region (default with --catalog: each instance's cheapest)");
  cmd->add_option("-o,--output", a->output, "write to FILE ('-' or absent: stdout)");
  cmd->callback([a] {
    OutputFormat f = parse_output_format(
        a->format, {OutputFormat::table, OutputFormat::json, OutputFormat::csv, OutputFormat::markdown});
    if ((!a->catalog.empty() || !a->region.empty()) && a->what != "offers")
      throw UserError("--catalog/--region: only for `list offers`");
    std::vector<std::string> warnings;
    nlohmann::json rows;
    std::vector<std::string> cols{"name", "description"};
    if (a->what == "models") rows = list_models();
    else if (a->what == "offers") {
      rows = list_offers(*a, warnings);
      cols = {"offer", "provider", "region", "device", "count", "system", "on_demand_usd_per_h", "spot_usd_per_h",
              "reserved_1y_usd_per_h", "capacity_block_usd_per_h", "date", "stale"};
    } else rows = list_config_dir(a->what);
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
      print_csv_records(os, rows, {cols.front()});
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
