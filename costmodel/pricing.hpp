// Price catalog: cloud offers and owned hardware, read once from configs/pricing/*.yaml into
// immutable PriceOffer structs. An offer is what one bills for (an instance, or a Cloud TPU
// plus the VM it needs), with $/h per pricing tier, its billing granularity, what it contains
// (devices and their power, for kWh) and, for owned hardware, purchase price and service life.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace xpusim::cost {

// capacity_block: AWS EC2 Capacity Blocks (GPU capacity reserved for a fixed block, paid up front).
enum class PricingTier { on_demand, preemptible, reserved_1y, reserved_3y, capacity_block, owned };
const char* tier_name(PricingTier t);
bool parse_tier(const std::string& s, PricingTier& out);
const char* tier_choices();

// How a provider rounds a run's duration into billed time. Per-second billing with a
// minimum (GCE since 2017-09, EC2 Linux since 2017-10-02), per started minute or hour (older).
struct BillingRule {
  double granularity_s = 1;   // 1 = per second, 60 = per started minute, 3600 = per started hour
  double minimum_s = 60;      // smallest billed duration
};
// Billed seconds of one run of `run_s` seconds under `rule`.
double billed_seconds(double run_s, const BillingRule& rule);

struct OfferItem {
  std::string what;     // device name (tpu_v2, v100_sxm2_16gb), "vcpu", or a VM type
  int count = 1;
  double power_w = 0;   // per unit, for energy; 0 = not counted
};

struct OwnedCost {
  double purchase_usd = 0;
  double service_life_years = 3;
  double utilization = 1;              // fraction of the service life the hardware is busy
  double electricity_usd_per_kwh = 0;
  double system_power_w = 0;           // whole machine at the wall while training
};

struct PriceOffer {
  std::string id;                      // catalog/name, e.g. aws_2018/p3.8xlarge
  std::string provider;
  std::string description;
  std::string date;                    // when the prices were listed (YYYY-MM or YYYY-MM-DD)
  std::string source;
  std::string region;                  // where the price holds (cloud region), empty = not stated
  std::string system;                  // xpusim system (configs/systems/) the offer's node matches, if any
  // Whether offer_containing may pick this offer for a published reference row. Today's prices
  // (2025 on) say nothing of what a 2018 row's run cost, so their catalogs opt out; studies and
  // `list offers` still name them by id.
  bool match_reference_rows = true;
  std::string file;
  int line = 0;
  std::map<PricingTier, double> usd_per_h;   // the offer's own prices (without includes)
  std::vector<std::string> includes;         // other offers billed with this one (TPU + its VM)
  std::vector<OfferItem> contains;
  BillingRule billing;
  std::optional<OwnedCost> owned;
  std::string where() const { return file + ":" + std::to_string(line); }
  // Total device power of the offer (sum of contains), watts.
  double power_w() const;
};

struct PriceCatalog {
  std::map<std::string, PriceOffer> offers;  // by id
  // Price of `id` at `tier` including its `includes`. Throws UserError naming the offer and
  // the tiers it has when a price is missing. Owned offers: amortised purchase + electricity.
  double usd_per_h(const std::string& id, PricingTier tier) const;
  bool has_price(const std::string& id, PricingTier tier) const;
  std::vector<std::string> tiers_of(const std::string& id) const;
  const PriceOffer& get(const std::string& id) const;  // UserError listing known ids
  // The id of the one offer that contains exactly `count` x `device`, narrowed (where that
  // leaves any) to `provider` (empty = any) and to offers whose listing year appears in
  // `dated_text` (e.g. a source "RiseML blog (2018-04)"). UserError when none or several remain.
  std::string offer_containing(const std::string& device, int count, const std::string& provider,
                               const std::string& dated_text) const;
  std::string known_ids() const;
};

// Every *.yaml in DIR (default: <config_dir>/pricing), sorted by file name; ids are unique.
PriceCatalog load_price_catalog(const std::string& dir = "");
// Cached default catalog (one per process): configs/pricing/*.yaml plus, when one was set
// (set_extra_price_catalog, else $XPUSIM_CATALOG with $XPUSIM_CATALOG_REGION), the offers of a
// SkyPilot vms.csv (costmodel/pricing_skypilot.hpp).
const PriceCatalog& default_price_catalog();
// The SkyPilot catalog the default catalog adds (empty path = none). Call before the first
// default_price_catalog(); later calls do not change a catalog already built.
void set_extra_price_catalog(const std::string& vms_csv, const std::string& region);

// Owned hardware: $/h of one busy hour = purchase / (life hours x utilization) + electricity.
double owned_usd_per_h(const OwnedCost& o);

}  // namespace xpusim::cost
