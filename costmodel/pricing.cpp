// Loads configs/pricing/*.yaml into the price catalog and applies billing rules.
#include "costmodel/pricing.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>

#include "common/error.hpp"
#include "common/spec_reader.hpp"
#include "common/config_paths.hpp"
#include "costmodel/pricing_skypilot.hpp"
#include <cstdlib>

namespace xpusim::cost {

// A child() result that is really there (yaml-cpp's null node converts to true).
inline bool present(const YAML::Node& n) { return n && n.IsDefined() && !n.IsNull(); }

namespace fs = std::filesystem;

namespace {
struct TierKey {
  PricingTier tier;
  const char* name;
  const char* key;
};
constexpr TierKey kTiers[] = {
    {PricingTier::on_demand, "on_demand", "on_demand_usd_per_h"},
    {PricingTier::preemptible, "preemptible", "preemptible_usd_per_h"},
    {PricingTier::reserved_1y, "reserved_1y", "reserved_1y_usd_per_h"},
    {PricingTier::reserved_3y, "reserved_3y", "reserved_3y_usd_per_h"},
    {PricingTier::capacity_block, "capacity_block", "capacity_block_usd_per_h"},
    {PricingTier::owned, "owned", ""},
};
// Average hours in a year (365.25 days), for amortising a purchase.
constexpr double kHoursPerYear = 8766.0;

std::string positive(double v) { return v > 0 ? "" : "must be > 0"; }
std::string non_negative(double v) { return v >= 0 ? "" : "must be >= 0"; }

BillingRule read_billing(const YAML::Node& n, const std::string& file, const std::string& ctx,
                         const BillingRule& def) {
  if (!present(n)) return def;
  SpecReader r(n, file, ctx);
  BillingRule b;
  b.granularity_s = r.number("granularity_s", def.granularity_s, "s",
                             "billing increment: 1 per second, 60 per started minute, 3600 per started hour", positive);
  b.minimum_s = r.number("minimum_s", def.minimum_s, "s", "shortest billed duration", non_negative);
  r.finish();
  return b;
}

std::vector<OfferItem> read_contains(const YAML::Node& n, const std::string& file, const std::string& ctx) {
  std::vector<OfferItem> out;
  if (!present(n)) return out;
  if (!n.IsSequence()) throw UserError(yaml_location(file, n) + ": " + ctx + ": expected a list of {what, count, power_w}");
  for (const auto& e : n) {
    SpecReader r(e, file, ctx);
    OfferItem it;
    it.what = r.text("what", std::nullopt, "device name, vcpu or VM type");
    it.count = static_cast<int>(r.integer("count", 1, "", "units in the offer",
                                          [](long long v) { return v > 0 ? "" : "must be > 0"; }));
    it.power_w = r.number("power_w", 0.0, "W", "power per unit while training (TDP), for energy", non_negative);
    r.finish();
    out.push_back(it);
  }
  return out;
}

void load_file(const std::string& path, PriceCatalog& cat) {
  YAML::Node root = load_config_yaml(path);
  SpecReader top(root, path);
  std::string catalog = top.text("catalog", std::nullopt, "catalog name, prefix of every offer id");
  std::string provider = top.text("provider", std::nullopt, "gcp, aws, owned, ...");
  std::string date = top.text("date", std::nullopt, "when these prices were listed");
  std::string source = top.text("source", std::nullopt, "where the prices come from");
  top.text("note", std::string(), "free text");
  const bool match_rows = top.flag("match_reference_rows", true,
                                      "let validation price published rows with these offers (false for today's prices)");
  BillingRule billing = read_billing(top.child("billing", "default billing rule"), path, "billing", BillingRule{});
  YAML::Node offers = top.child("offers", "list of offers", true);
  top.finish();
  if (!offers.IsSequence()) throw UserError(yaml_location(path, offers) + ": offers: expected a list");
  for (const auto& o : offers) {
    SpecReader r(o, path, "offers");
    PriceOffer p;
    std::string name = r.text("name", std::nullopt, "offer name (unique in the catalog)");
    p.id = catalog + "/" + name;
    p.provider = provider;
    p.match_reference_rows = match_rows;
    p.file = path;
    p.line = o.Mark().line + 1;
    p.description = r.text("description", std::string(), "what the offer is");
    p.date = r.text("date", date, "when this price was listed (default: the file's)");
    p.source = r.text("source", source, "where the price comes from (default: the file's)");
    r.text("note", std::string(), "free text (e.g. why a price is unverified)");
    p.region = r.text("region", std::string(), "cloud region the price holds in");
    p.system = r.text("system", std::string(), "xpusim system (configs/systems/) the offer's node matches");
    for (const auto& t : kTiers) {
      if (!*t.key) continue;
      if (r.has(t.key)) p.usd_per_h[t.tier] = r.number(t.key, std::nullopt, "USD/h", std::string(t.name) + " price", non_negative);
      else r.number(t.key, 0.0, "USD/h", std::string(t.name) + " price (absent = not offered)");
    }
    YAML::Node inc = r.child("includes", "other offer ids billed together with this one");
    if (present(inc)) {
      if (!inc.IsSequence()) r.fail("includes", "expected a list of offer ids");
      for (const auto& i : inc) {
        if (!i.IsScalar()) r.fail("includes", "expected a list of offer ids");
        p.includes.push_back(i.Scalar());
      }
    }
    p.contains = read_contains(r.child("contains", "what the offer holds"), path, "contains");
    p.billing = read_billing(r.child("billing", "billing rule (default: the file's)"), path, "billing", billing);
    YAML::Node own = r.child("owned", "owned hardware: purchase, service life, electricity");
    if (present(own)) {
      SpecReader w(own, path, "owned");
      OwnedCost c;
      c.purchase_usd = w.number("purchase_usd", std::nullopt, "USD", "purchase price", positive);
      c.service_life_years = w.number("service_life_years", 3.0, "years", "amortisation period", positive);
      c.utilization = w.number("utilization", 1.0, "fraction", "share of the service life spent training",
                               [](double v) { return v > 0 && v <= 1 ? "" : "must be in (0, 1]"; });
      c.electricity_usd_per_kwh = w.number("electricity_usd_per_kwh", std::nullopt, "USD/kWh", "electricity price", non_negative);
      c.system_power_w = w.number("system_power_w", std::nullopt, "W", "whole machine at the wall while training", non_negative);
      w.finish();
      p.owned = c;
      p.usd_per_h[PricingTier::owned] = owned_usd_per_h(c);
    }
    r.finish();
    if (p.usd_per_h.empty() && p.includes.empty())
      throw UserError(p.where() + ": offers: " + name + ": no price (give on_demand_usd_per_h, ... or owned)");
    if (cat.offers.count(p.id))
      throw UserError(p.where() + ": name: duplicate offer id '" + p.id + "' (first at " + cat.offers.at(p.id).where() + ")");
    cat.offers.emplace(p.id, std::move(p));
  }
}
}  // namespace

const char* tier_name(PricingTier t) {
  for (const auto& k : kTiers)
    if (k.tier == t) return k.name;
  return "?";
}

bool parse_tier(const std::string& s, PricingTier& out) {
  for (const auto& k : kTiers)
    if (s == k.name) {
      out = k.tier;
      return true;
    }
  // Providers' own words for the same tiers: AWS/Azure "spot", GCP "committed use" (CUD).
  if (s == "spot") {
    out = PricingTier::preemptible;
    return true;
  }
  if (s == "committed_1y" || s == "committed_3y") {
    out = s == "committed_1y" ? PricingTier::reserved_1y : PricingTier::reserved_3y;
    return true;
  }
  return false;
}

const char* tier_choices() { return "on_demand|preemptible|spot|reserved_1y|reserved_3y|committed_1y|committed_3y|capacity_block|owned"; }

double billed_seconds(double run_s, const BillingRule& rule) {
  double t = std::max(run_s, rule.minimum_s);
  // Round up to whole increments; the small epsilon keeps exact multiples from rounding up.
  return std::ceil(t / rule.granularity_s - 1e-9) * rule.granularity_s;
}

double owned_usd_per_h(const OwnedCost& o) {
  double amortised = o.purchase_usd / (o.service_life_years * kHoursPerYear * o.utilization);
  return amortised + o.system_power_w / 1000.0 * o.electricity_usd_per_kwh;
}

double PriceOffer::power_w() const {
  // Owned machines are metered at the wall; cloud offers count their devices' TDP.
  if (owned && owned->system_power_w > 0) return owned->system_power_w;
  double w = 0;
  for (const auto& c : contains) w += c.count * c.power_w;
  return w;
}

const PriceOffer& PriceCatalog::get(const std::string& id) const {
  auto it = offers.find(id);
  if (it == offers.end()) throw UserError("unknown price offer '" + id + "' (known: " + known_ids() + ")");
  return it->second;
}

std::string PriceCatalog::offer_containing(const std::string& device, int count, const std::string& provider,
                                           const std::string& dated_text) const {
  std::vector<const PriceOffer*> found;
  for (const auto& [id, offer] : offers)
    for (const auto& item : offer.contains)
      if (offer.match_reference_rows && item.what == device && item.count == count) found.push_back(&offer);
  if (found.empty())
    throw UserError("no price offer contains " + std::to_string(count) + " x " + device + " (configs/pricing/)");
  // Each narrowing applies only when it leaves a candidate: a hint never empties the list.
  auto narrow = [&](auto keep) {
    std::vector<const PriceOffer*> k;
    for (auto* o : found)
      if (keep(*o)) k.push_back(o);
    if (!k.empty()) found = k;
  };
  if (!provider.empty()) narrow([&](const PriceOffer& o) { return o.provider == provider; });
  narrow([&](const PriceOffer& o) {
    return o.date.size() >= 4 && dated_text.find(o.date.substr(0, 4)) != std::string::npos;
  });
  if (found.size() > 1) {
    std::string ids;
    for (auto* o : found) ids += (ids.empty() ? "" : ", ") + o->id;
    throw UserError("several price offers fit " + std::to_string(count) + " x " + device + ": " + ids);
  }
  return found.front()->id;
}

std::string PriceCatalog::known_ids() const {
  std::string list;
  for (const auto& [id, o] : offers) list += (list.empty() ? "" : ", ") + id;
  return list;
}

bool PriceCatalog::has_price(const std::string& id, PricingTier tier) const {
  auto it = offers.find(id);
  if (it == offers.end()) return false;
  const PriceOffer& o = it->second;
  if (o.usd_per_h.empty() && o.includes.empty()) return false;
  if (!o.usd_per_h.empty() && !o.usd_per_h.count(tier)) return false;
  for (const auto& i : o.includes)
    if (!has_price(i, tier)) return false;
  return true;
}

std::vector<std::string> PriceCatalog::tiers_of(const std::string& id) const {
  std::vector<std::string> out;
  for (const auto& k : kTiers)
    if (has_price(id, k.tier)) out.push_back(k.name);
  return out;
}

double PriceCatalog::usd_per_h(const std::string& id, PricingTier tier) const {
  const PriceOffer& o = get(id);
  if (!has_price(id, tier)) {
    std::string have;
    for (const auto& t : tiers_of(id)) have += (have.empty() ? "" : ", ") + t;
    throw UserError("offer '" + id + "' (" + o.where() + ") has no " + tier_name(tier) + " price" +
                    (o.includes.empty() ? "" : " (itself or an offer it includes)") + "; it has: " +
                    (have.empty() ? "none" : have));
  }
  double p = 0;
  auto it = o.usd_per_h.find(tier);
  if (it != o.usd_per_h.end()) p += it->second;
  for (const auto& i : o.includes) p += usd_per_h(i, tier);
  return p;
}

PriceCatalog load_price_catalog(const std::string& dir_in) {
  std::string dir = dir_in.empty() ? (fs::path(config_dir()) / "pricing").string() : dir_in;
  PriceCatalog cat;
  if (!fs::is_directory(dir)) throw UserError(dir + ": price catalog folder not found");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) load_file(f, cat);
  // Includes must name offers that exist (checked once everything is loaded).
  for (const auto& [id, o] : cat.offers)
    for (const auto& i : o.includes)
      if (!cat.offers.count(i))
        throw UserError(o.where() + ": includes: unknown offer '" + i + "' (known: " + cat.known_ids() + ")");
  // ...and form no cycle: a price sums its includes recursively (found by the pricing_yaml
  // fuzzer: an offer including itself overflowed the stack).
  std::map<std::string, int> state;  // 1: on the current path, 2: done
  std::vector<std::string> path;
  std::function<void(const std::string&)> visit = [&](const std::string& id) {
    int& s = state[id];
    if (s == 2) return;
    if (s == 1) {
      std::string cycle;
      for (auto it = std::find(path.begin(), path.end(), id); it != path.end(); ++it) cycle += *it + " -> ";
      throw UserError(cat.offers.at(id).where() + ": includes: offers include each other in a cycle: " + cycle + id);
    }
    s = 1;
    path.push_back(id);
    for (const auto& i : cat.offers.at(id).includes) visit(i);
    path.pop_back();
    state[id] = 2;
  };
  for (const auto& [id, o] : cat.offers) visit(id);
  return cat;
}

namespace {
struct ExtraCatalog {
  std::string path, region;
  bool set = false;
};
ExtraCatalog& extra_catalog() {
  static ExtraCatalog e;
  return e;
}
}  // namespace

void set_extra_price_catalog(const std::string& vms_csv, const std::string& region) {
  extra_catalog() = {vms_csv, region, true};
}

const PriceCatalog& default_price_catalog() {
  static const PriceCatalog cat = [] {
    PriceCatalog c = load_price_catalog();
    ExtraCatalog e = extra_catalog();
    if (!e.set) {
      // The config default: a SkyPilot catalog named in the environment.
      const char* p = std::getenv("XPUSIM_CATALOG");
      const char* r = std::getenv("XPUSIM_CATALOG_REGION");
      if (p && *p) e = {p, r ? r : "", true};
    }
    if (e.set && !e.path.empty()) merge_offers(c, load_skypilot_catalog(e.path, e.region));
    return c;
  }();
  return cat;
}

}  // namespace xpusim::cost
