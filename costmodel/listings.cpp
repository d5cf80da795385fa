// The listings (listings.hpp): moved here from cli/cmd_list.cpp so that `xpusim list` and
// Python's xpusim.list build the same rows.
#include "costmodel/listings.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "common/config_paths.hpp"
#include "common/error.hpp"
#include "costmodel/pricing.hpp"
#include "costmodel/pricing_skypilot.hpp"
#include "engine/framework_spec.hpp"
#include "engine/platform_spec.hpp"
#include "models/zoo.hpp"

namespace xpusim::cost {

namespace {

namespace fs = std::filesystem;

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

nlohmann::json list_frameworks() {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& p : framework_profiles())
    arr.push_back({{"name", p.name},
                   {"names", p.names},
                   {"engines", p.engines},
                   {"versions", p.versions},
                   {"base", p.base},
                   {"neutral", p.neutral},
                   {"description", p.description}});
  return arr;
}

nlohmann::json price_or_null(const PriceCatalog& cat, const std::string& id, PricingTier t) {
  return cat.has_price(id, t) ? nlohmann::json(cat.usd_per_h(id, t)) : nlohmann::json();
}

nlohmann::json list_offers(const ListingOptions& a, std::vector<std::string>& warnings) {
  // Without --catalog: configs/pricing/ plus any catalog given globally (--catalog before the
  // command, $XPUSIM_CATALOG).
  PriceCatalog cat = a.catalog.empty() ? default_price_catalog()
                                             : load_skypilot_catalog(a.catalog, a.region);
  if (a.catalog.empty() && !a.region.empty())
    for (auto it = cat.offers.begin(); it != cat.offers.end();)
      it = it->second.region == a.region ? std::next(it) : cat.offers.erase(it);
  const std::string today = today_utc();
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
    auto age = price_age_days(o.date, today);
    std::string warning = stale_price_warning(o, today);
    if (!warning.empty()) {
      // One line per catalog and date, not per offer: "aws_2018 (5 offers): prices dated ...".
      const std::string catalog = id.substr(0, id.find('/'));
      auto& [count, line] = stale[catalog + "\n" + o.date];
      ++count;
      line = catalog + ": prices dated " + o.date + " are " + std::to_string(age.value_or(0)) + " days old (> " +
             std::to_string(kStalePriceDays) + "); re-check " + o.source;
    }
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

}  // namespace

const std::vector<std::string>& listing_kinds() {
  static const std::vector<std::string> kinds{"devices", "systems", "clusters", "offers", "studies", "models",
                                              "frameworks", "datasets"};
  return kinds;
}

Listing list_rows(const std::string& kind, const ListingOptions& o) {
  const auto& kinds = listing_kinds();
  if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end())
    throw FieldError("kind", "unknown kind '" + kind + "' (devices, systems, clusters, offers, studies, models, frameworks, datasets)");
  if ((!o.catalog.empty() || !o.region.empty()) && kind != "offers")
    throw FieldError("catalog", "a catalog or region is only for offers");
  Listing l;
  l.table_columns = {"name", "description"};
  if (kind == "models") {
    l.rows = list_models();
  } else if (kind == "frameworks") {
    l.rows = list_frameworks();
    l.table_columns = {"name", "names", "versions", "engines", "base", "neutral", "description"};
  } else if (kind == "datasets") {
    // configs/datasets.yaml is one file of many datasets: what `--dataset` and a model's
    // `dataset:` may name, with the per-sample host cost and a text corpus's lengths.
    for (const auto& [name, d] : load_datasets())
      l.rows.push_back({{"name", name},
                        {"train_examples", d.train_examples},
                        {"host_preprocess_ms", d.host_preprocess_ms},
                        {"document_tokens_mean", d.document_tokens_mean > 0 ? nlohmann::json(d.document_tokens_mean)
                                                                            : nlohmann::json()},
                        {"description", d.description}});
    l.table_columns = {"name", "train_examples", "host_preprocess_ms", "document_tokens_mean", "description"};
  } else if (kind == "offers") {
    l.rows = list_offers(o, l.warnings);
    l.table_columns = {"offer", "provider", "region", "device", "count", "system", "on_demand_usd_per_h",
                       "spot_usd_per_h", "reserved_1y_usd_per_h", "capacity_block_usd_per_h", "date", "stale"};
  } else {
    l.rows = list_config_dir(kind);
  }
  return l;
}

}  // namespace xpusim::cost
