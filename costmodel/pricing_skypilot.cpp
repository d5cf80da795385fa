// Reads SkyPilot vms.csv catalogs into price offers and dates prices (see pricing_skypilot.hpp).
#include "costmodel/pricing_skypilot.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <limits>

#include "common/config_paths.hpp"
#include "common/csv.hpp"
#include "common/error.hpp"
#include "common/spec_reader.hpp"

namespace xpusim::cost {

namespace fs = std::filesystem;

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Days since 1970-01-01 of a proleptic Gregorian date (the civil-from-days inverse).
long days_from_civil(long y, long m, long d) {
  y -= m <= 2;
  const long era = (y >= 0 ? y : y - 399) / 400;
  const long yoe = y - era * 400;
  const long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

std::optional<long> parse_day(const std::string& s) {
  int y = 0, m = 1, d = 1;
  char tail = 0;
  if (s.size() == 4 && std::sscanf(s.c_str(), "%4d%c", &y, &tail) == 1) return days_from_civil(y, 1, 1);
  if (s.size() == 7 && std::sscanf(s.c_str(), "%4d-%2d%c", &y, &m, &tail) == 2 && m >= 1 && m <= 12)
    return days_from_civil(y, m, 1);
  if (s.size() == 10 && std::sscanf(s.c_str(), "%4d-%2d-%2d%c", &y, &m, &d, &tail) == 3 && m >= 1 && m <= 12 &&
      d >= 1 && d <= 31)
    return days_from_civil(y, m, d);
  return std::nullopt;
}

std::string ymd(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[48];  // room for any int year, so GCC sees no truncation
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
  return buf;
}

// A number field of the CSV: empty = absent; anything else must be a finite number >= 0.
std::optional<double> number_field(const std::string& s, const std::string& where, const std::string& column) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v) || v < 0)
    throw UserError(where + ": " + column + ": expected a number >= 0, got '" + s + "'");
  return v;
}

// Per-GPU memory from GpuInfo ("{'Gpus': [{... 'MemoryInfo': {'SizeInMiB': 81920}}], ...}").
std::optional<double> gpu_memory_gib(const std::string& info) {
  const std::string key = "'SizeInMiB':";
  auto at = info.find(key);
  if (at == std::string::npos) return std::nullopt;
  char* end = nullptr;
  double mib = std::strtod(info.c_str() + at + key.size(), &end);
  if (end == info.c_str() + at + key.size() || !(mib > 0)) return std::nullopt;
  return mib / 1024.0;
}

double device_power_w(const std::string& device, const std::string& where) {
  std::string path;
  try {
    path = find_config_file("devices", device, "device", "device");
  } catch (const FieldError& e) {
    throw UserError(where + ": device: " + e.message());
  }
  YAML::Node n = load_config_yaml(path);
  if (n["max_power_w"] && n["max_power_w"].IsScalar()) return n["max_power_w"].as<double>();
  return 0;
}

struct Group {  // one instance type in one region
  std::string instance, accelerator, region, gpu_info;
  double count = 0, vcpus = 0, memory_gib = 0;
  std::optional<double> on_demand, spot;
  int line = 0;
};

}  // namespace

std::vector<SkypilotRule> load_skypilot_rules(const std::string& path_in) {
  const std::string path =
      path_in.empty() ? (fs::path(config_dir()) / "pricing" / "skypilot" / "accelerators.yaml").string() : path_in;
  YAML::Node root = load_config_yaml(path);
  SpecReader top(root, path);
  YAML::Node rules = top.child("rules", "mapping rules, first match wins", true);
  top.finish();
  if (!rules.IsSequence()) throw UserError(yaml_location(path, rules) + ": rules: expected a list");
  std::vector<SkypilotRule> out;
  for (const auto& n : rules) {
    SpecReader r(n, path, "rules");
    SkypilotRule rule;
    rule.line = n.Mark().line + 1;
    rule.accelerator = lower(r.text("accelerator", std::nullopt, "SkyPilot AcceleratorName"));
    rule.instance_contains = lower(r.text("instance_contains", std::string(), "text the InstanceType must contain"));
    if (r.has("memory_gib"))
      rule.memory_gib = r.number("memory_gib", std::nullopt, "GiB", "per-GPU memory the GpuInfo must show",
                                 [](double v) { return v > 0 ? "" : "must be > 0"; });
    else
      r.number("memory_gib", 0.0, "GiB", "per-GPU memory the GpuInfo must show (absent = any)");
    rule.device = r.text("device", std::nullopt, "xpusim device (configs/devices/)");
    YAML::Node sys = r.child("systems", "{GPU count: xpusim system} for whole nodes");
    if (sys && sys.IsDefined() && !sys.IsNull()) {
      if (!sys.IsMap()) r.fail("systems", "expected a mapping {count: system}");
      for (const auto& kv : sys) {
        int c = 0;
        try {
          c = kv.first.as<int>();
        } catch (const YAML::Exception&) {
          r.fail("systems", "keys must be GPU counts, got '" + kv.first.Scalar() + "'");
        }
        if (c <= 0 || !kv.second.IsScalar()) r.fail("systems", "expected {count > 0: system name}");
        find_config_file("systems", kv.second.Scalar(), "systems", "system");  // must exist
        rule.systems[c] = kv.second.Scalar();
      }
    }
    r.finish();
    rule.power_w = device_power_w(rule.device, path + ":" + std::to_string(rule.line));
    out.push_back(rule);
  }
  return out;
}

const SkypilotRule* match_skypilot_rule(const std::vector<SkypilotRule>& rules, const std::string& accelerator,
                                        const std::string& instance_type, std::optional<double> memory_gib) {
  const std::string acc = lower(accelerator), inst = lower(instance_type);
  for (const auto& r : rules) {
    if (r.accelerator != acc) continue;
    if (!r.instance_contains.empty() && inst.find(r.instance_contains) == std::string::npos) continue;
    if (r.memory_gib && !(memory_gib && std::fabs(*memory_gib - *r.memory_gib) < 1.0)) continue;
    return &r;
  }
  return nullptr;
}

PriceCatalog load_skypilot_catalog(const std::string& path, const std::string& region, const std::string& date_in) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw UserError(path + ": SkyPilot catalog not found (a vms.csv file)");
  const std::vector<CsvRecord> rows = parse_csv(read_text_file(path), path);
  if (rows.empty()) throw UserError(path + ": empty file (expected a SkyPilot vms.csv with a header line)");
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < rows[0].fields.size(); ++i) col[rows[0].fields[i]] = i;
  const char* required[] = {"InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region"};
  for (const char* c : required)
    if (!col.count(c))
      throw UserError(path + ":" + std::to_string(rows[0].line) + ": header: no column '" + c +
                      "' (a SkyPilot vms.csv has InstanceType, AcceleratorName, AcceleratorCount, vCPUs, MemoryGiB, "
                      "Price, Region, GpuInfo, SpotPrice)");
  auto field = [&](const CsvRecord& r, const char* name) -> std::string {
    auto it = col.find(name);
    if (it == col.end() || it->second >= r.fields.size()) return "";
    return r.fields[it->second];
  };

  std::map<std::pair<std::string, std::string>, Group> groups;
  std::vector<std::string> regions;
  for (size_t i = 1; i < rows.size(); ++i) {
    const CsvRecord& r = rows[i];
    const std::string where = path + ":" + std::to_string(r.line);
    if (r.fields.size() != rows[0].fields.size())
      throw UserError(where + ": row has " + std::to_string(r.fields.size()) + " fields, the header " +
                      std::to_string(rows[0].fields.size()));
    const std::string reg = field(r, "Region");
    if (std::find(regions.begin(), regions.end(), reg) == regions.end()) regions.push_back(reg);
    const std::string acc = field(r, "AcceleratorName");
    if (acc.empty() || (!region.empty() && reg != region)) continue;
    Group g;
    g.instance = field(r, "InstanceType");
    g.accelerator = acc;
    g.region = reg;
    g.gpu_info = field(r, "GpuInfo");
    g.count = number_field(field(r, "AcceleratorCount"), where, "AcceleratorCount").value_or(0);
    g.vcpus = number_field(field(r, "vCPUs"), where, "vCPUs").value_or(0);
    g.memory_gib = number_field(field(r, "MemoryGiB"), where, "MemoryGiB").value_or(0);
    g.on_demand = number_field(field(r, "Price"), where, "Price");
    g.spot = number_field(field(r, "SpotPrice"), where, "SpotPrice");
    g.line = r.line;
    if (g.instance.empty()) throw UserError(where + ": InstanceType: empty");
    auto [it, fresh] = groups.emplace(std::make_pair(g.instance, g.region), g);
    if (!fresh) {  // another availability zone of the same region
      Group& h = it->second;
      if (g.on_demand && (!h.on_demand || *g.on_demand < *h.on_demand)) h.on_demand = g.on_demand;
      if (g.spot && (!h.spot || *g.spot < *h.spot)) h.spot = g.spot;
    }
  }
  if (!region.empty() && std::find(regions.begin(), regions.end(), region) == regions.end()) {
    std::sort(regions.begin(), regions.end());
    std::string list;
    for (const auto& r : regions) list += (list.empty() ? "" : ", ") + r;
    throw UserError(path + ": region '" + region + "' not in the catalog (regions: " + list + ")");
  }
  // One region per instance type: the cheapest on-demand (then spot) price; ties by name.
  std::map<std::string, const Group*> chosen;
  auto key = [](const Group& g) {
    return g.on_demand ? *g.on_demand : g.spot ? *g.spot + 1e12 : std::numeric_limits<double>::infinity();
  };
  for (const auto& [k, g] : groups) {
    auto it = chosen.find(g.instance);
    if (it == chosen.end() || key(g) < key(*it->second)) chosen[g.instance] = &g;
  }

  const std::vector<SkypilotRule> rules = load_skypilot_rules();
  std::string date = date_in;
  if (date.empty()) {
    auto ft = fs::last_write_time(path);
    auto sys = std::chrono::time_point_cast<std::chrono::seconds>(ft - fs::file_time_type::clock::now() +
                                                                  std::chrono::system_clock::now());
    date = ymd(std::chrono::system_clock::to_time_t(sys));
  }
  // The cloud is the folder the file sits in (catalogs/v8/aws/vms.csv), as SkyPilot lays them out.
  std::string provider = fs::path(path).parent_path().filename().string();
  if (provider.empty() || provider == ".") provider = "skypilot";

  PriceCatalog cat;
  for (const auto& [inst, g] : chosen) {
    if (!g->on_demand && !g->spot) continue;
    const auto mem = gpu_memory_gib(g->gpu_info);
    const SkypilotRule* rule = match_skypilot_rule(rules, g->accelerator, g->instance, mem);
    if (!rule) continue;  // an accelerator xpusim does not model
    const int count = static_cast<int>(std::lround(g->count));
    if (count <= 0 || std::fabs(g->count - count) > 1e-9) continue;  // fractional GPUs (shared slices)
    PriceOffer p;
    p.id = "skypilot/" + inst;
    p.provider = provider;
    p.region = g->region;
    p.date = date;
    p.match_reference_rows = false;  // today's prices (see PriceOffer)
    p.source = "SkyPilot catalog " + path;
    p.file = path;
    p.line = g->line;
    p.description = std::to_string(count) + " x " + g->accelerator +
                    (mem ? " " + std::to_string(static_cast<int>(std::lround(*mem))) + " GiB" : std::string()) +
                    (g->vcpus > 0 ? ", " + std::to_string(static_cast<int>(std::lround(g->vcpus))) + " vCPUs" : "");
    if (g->on_demand && *g->on_demand > 0) p.usd_per_h[PricingTier::on_demand] = *g->on_demand;
    if (g->spot && *g->spot > 0) p.usd_per_h[PricingTier::preemptible] = *g->spot;
    if (p.usd_per_h.empty()) continue;
    p.contains.push_back({rule->device, count, rule->power_w});
    if (g->vcpus > 0) p.contains.push_back({"vcpu", static_cast<int>(std::lround(g->vcpus)), 0});
    auto sys = rule->systems.find(count);
    if (sys != rule->systems.end()) p.system = sys->second;
    cat.offers.emplace(p.id, std::move(p));
  }
  if (cat.offers.empty())
    throw UserError(path + ": no row maps to an xpusim device" + (region.empty() ? "" : " in region " + region) +
                    " (configs/pricing/skypilot/accelerators.yaml)");
  return cat;
}

void merge_offers(PriceCatalog& into, const PriceCatalog& from) {
  for (const auto& [id, o] : from.offers) {
    if (into.offers.count(id))
      throw UserError(o.where() + ": offer id '" + id + "' is also at " + into.offers.at(id).where());
    into.offers.emplace(id, o);
  }
}

std::string today_utc() {
  const char* env = std::getenv("XPUSIM_TODAY");
  if (env && *env) {
    if (std::string(env).size() != 10 || !parse_day(env)) throw UserError(std::string("XPUSIM_TODAY: expected YYYY-MM-DD, got '") + env + "'");
    return env;
  }
  return ymd(std::time(nullptr));
}

std::optional<long> price_age_days(const std::string& date, const std::string& today) {
  auto d = parse_day(date), t = parse_day(today);
  if (!d || !t) return std::nullopt;
  return *t - *d;
}

std::string stale_price_warning(const PriceOffer& o, const std::string& today) {
  auto age = price_age_days(o.date, today);
  if (!age || *age <= kStalePriceDays) return "";
  return "offer " + o.id + ": price dated " + o.date + " is " + std::to_string(*age) + " days old (> " +
         std::to_string(kStalePriceDays) + "); re-check " + (o.source.empty() ? o.where() : o.source);
}

}  // namespace xpusim::cost
