// `offer: cheapest` (costmodel/offer_choice.hpp) on a hand-built catalog: which offers hold a
// placement (whole hosts per instance, whole instances, tier, provider, region, system), the
// drop of prices a year older than the newest, ties, the error naming every skipped offer, and
// the cost function paying for every instance. Prices are picked so each rule changes the pick.
#include <catch2/catch.hpp>

#include "common/error.hpp"
#include "costmodel/offer_choice.hpp"
#include "costmodel/target_cost.hpp"

using namespace xpusim;
using namespace xpusim::cost;

namespace {

void add(PriceCatalog& c, const std::string& id, const std::string& provider, const std::string& region,
         const std::string& date, int gpus, double on_demand, double spot = -1, const std::string& system = "") {
  PriceOffer o;
  o.id = id;
  o.provider = provider;
  o.region = region;
  o.date = date;
  o.source = "https://example.invalid/" + id;
  o.system = system;
  o.usd_per_h[PricingTier::on_demand] = on_demand;
  if (spot >= 0) o.usd_per_h[PricingTier::preemptible] = spot;
  o.contains.push_back({"gpu", gpus, 100});
  o.contains.push_back({"vcpu", 8 * gpus, 0});
  c.offers[id] = o;
}

// gpu per GPU-hour: a/one 2.40, c/four 2.25, a/big8 2.50, b/big8 2.75, old/big8 1.25 (2024).
PriceCatalog catalog() {
  PriceCatalog c;
  add(c, "a/big8", "a", "r1", "2026-01", 8, 20.0, 6.0, "sysA");
  add(c, "a/one", "a", "r1", "2026-01", 1, 2.4);
  add(c, "b/big8", "b", "r2", "2026-03", 8, 22.0, 5.0);
  add(c, "c/four", "c", "r3", "2026-02", 4, 9.0);
  add(c, "old/big8", "a", "r1", "2024-01", 8, 10.0);
  return c;
}

OfferNeed need(int count, int node_devices, PricingTier tier = PricingTier::on_demand) {
  OfferNeed n;
  n.device = "gpu";
  n.count = count;
  n.node_devices = node_devices;
  n.tier = tier;
  return n;
}

std::string choice_error(const PriceCatalog& c, const OfferNeed& n) {
  try {
    cheapest_offer(c, n);
  } catch (const FieldError& e) {
    CHECK(e.field() == "offer");
    return e.message();
  }
  return "";
}

}  // namespace

TEST_CASE("cheapest offer: whole hosts per instance, lowest total USD/h", "[pricing][offer_choice]") {
  const PriceCatalog c = catalog();
  // 1 GPU: any offer holds it; old/big8 (2024-01) is > 365 days before the newest (2026-03).
  OfferChoice one = cheapest_offer(c, need(1, 0));
  CHECK(one.id == "a/one");
  CHECK(one.usd_per_h == Approx(2.4));
  CHECK(one.instances == 1);
  CHECK(one.candidates == 4);
  CHECK(one.summary ==
        "cheapest of 4 offers holding 1 x gpu at on_demand: a/one, 2.4 USD/h, listed 2026-01, source "
        "https://example.invalid/a/one");
  // 8 GPUs, hosts of 8 (or no system: one instance holds all): only the 8-GPU offers; 20 < 22.
  for (int node : {8, 0}) {
    OfferChoice eight = cheapest_offer(c, need(8, node));
    CHECK(eight.id == "a/big8");
    CHECK(eight.usd_per_h == Approx(20.0));
    CHECK(eight.candidates == 2);
  }
  // Hosts of 4: two c/four (2 x 9 = 18) beat one a/big8 (20); a/one would split a host.
  OfferChoice four = cheapest_offer(c, need(8, 4));
  CHECK(four.id == "c/four");
  CHECK(four.instances == 2);
  CHECK(four.devices_per_instance == 4);
  CHECK(four.usd_per_h == Approx(18.0));
  CHECK(four.summary.find("holding 8 x gpu at on_demand: 2 x c/four, 18 USD/h") != std::string::npos);
  // 16 GPUs on hosts of 8: 2 x a/big8 = 40 vs 2 x b/big8 = 44 vs 4 x c/four (splits a host).
  OfferChoice sixteen = cheapest_offer(c, need(16, 8));
  CHECK(sixteen.id == "a/big8");
  CHECK(sixteen.instances == 2);
  CHECK(sixteen.usd_per_h == Approx(40.0));
}

TEST_CASE("cheapest offer: tier, provider, region, system and whole instances narrow the pick",
          "[pricing][offer_choice]") {
  const PriceCatalog c = catalog();
  OfferNeed spot = need(8, 8, PricingTier::preemptible);
  CHECK(cheapest_offer(c, spot).id == "b/big8");  // 5 < 6
  CHECK(cheapest_offer(c, spot).usd_per_h == Approx(5.0));
  spot.provider = "a";
  CHECK(cheapest_offer(c, spot).id == "a/big8");
  OfferNeed r2 = need(8, 8);
  r2.region = "r2";
  CHECK(cheapest_offer(c, r2).id == "b/big8");
  // A placement on another system skips an offer whose node is sysA.
  OfferNeed sysb = need(8, 8);
  sysb.system = "sysB";
  CHECK(cheapest_offer(c, sysb).id == "b/big8");
  // Within provider a the 2024 price is dropped (newest a price: 2026-01), although it is cheaper.
  OfferNeed a = need(8, 8);
  a.provider = "a";
  CHECK(cheapest_offer(c, a).id == "a/big8");
  // Billed per device (plan): 12 GPUs on hosts of 4 are 3 c/four; 12 is no whole number of 8s.
  OfferNeed whole = need(12, 4);
  whole.whole_instances = true;
  OfferChoice w = cheapest_offer(c, whole);
  CHECK(w.id == "c/four");
  CHECK(w.instances == 3);
  CHECK(w.usd_per_h == Approx(27.0));
  // Without whole instances 12 on hosts of 4 could also be 2 x a/big8 (40) -- still dearer than 27.
  CHECK(cheapest_offer(c, need(12, 4)).usd_per_h == Approx(27.0));
}

TEST_CASE("cheapest offer: ties go to the newer price, then fewer instances, then the id", "[pricing][offer_choice]") {
  PriceCatalog c;
  add(c, "x/eight", "x", "", "2026-01", 8, 16.0);
  add(c, "y/eight", "y", "", "2026-06", 8, 16.0);
  add(c, "z/two", "z", "", "2026-06", 2, 4.0);
  CHECK(cheapest_offer(c, need(8, 2)).id == "y/eight");  // 16 = 16 = 4 x 4; newest, then 1 instance
  PriceCatalog d;
  add(d, "q/eight", "q", "", "2026-06", 8, 16.0);
  add(d, "p/eight", "p", "", "2026-06", 8, 16.0);
  CHECK(cheapest_offer(d, need(8, 8)).id == "p/eight");
  // Only old prices: nothing newer to compare with, so the old one is taken.
  PriceCatalog old;
  add(old, "k/2018", "k", "", "2018-04", 1, 0.9);
  CHECK(cheapest_offer(old, need(1, 0)).id == "k/2018");
}

TEST_CASE("cheapest offer: none holds the placement -> one error naming each offer and why", "[pricing][offer_choice]") {
  const PriceCatalog c = catalog();
  OfferNeed z = need(8, 8);
  z.provider = "z";
  CHECK(choice_error(c, z) ==
        "no price offer holds 8 x gpu at on_demand, provider z: a/big8: provider a; a/one: provider a; b/big8: "
        "provider b; c/four: provider c; old/big8: provider a");
  CHECK(choice_error(c, need(8, 8, PricingTier::reserved_1y)).find(
            "a/big8: no reserved_1y price (has: on_demand, preemptible)") != std::string::npos);
  const std::string split = choice_error(c, [] {
    OfferNeed n = need(8, 8);
    n.region = "r3";
    return n;
  }());
  CHECK(split.find("c/four: 4 devices per instance cannot hold 8 together") != std::string::npos);
  CHECK(split.find("a/big8: region r1") != std::string::npos);
  const std::string spot = choice_error(c, [] {
    OfferNeed n = need(16, 8, PricingTier::preemptible);
    n.region = "r1";
    n.system = "sysB";
    return n;
  }());
  CHECK(spot.find("a/big8: its node is sysA, the placement's sysB; a/one: no preemptible price (has: on_demand)") !=
        std::string::npos);
  CHECK(choice_error(c, [] {
          OfferNeed n = need(16, 8);
          n.region = "r3";
          return n;
        }()).find("c/four: 4 devices per instance splits a host of 8") != std::string::npos);
  OfferNeed other = need(1, 0);
  other.device = "tpu_v9";
  CHECK(choice_error(c, other) == "no price offer contains tpu_v9 (configs/pricing/ and any SkyPilot catalog loaded)");
}

TEST_CASE("cheapest offer: the cost function pays for every instance", "[pricing][offer_choice]") {
  const PriceCatalog c = catalog();
  const OfferChoice ch = cheapest_offer(c, need(8, 4));
  StudyOption o;
  o.offer = ch.id;
  o.offer_instances = ch.instances;
  OptionSpeed speed;
  speed.samples_per_s = 360.0;
  const TargetCost t = cost_to_target(o, nullptr, speed, c, ConvergenceCatalog{});
  REQUIRE(t.usd_per_h);
  CHECK(*t.usd_per_h == Approx(18.0));                         // 2 x 9
  CHECK(*t.samples_per_s_per_usd_per_h == Approx(360.0 / 18.0));
  CHECK(*t.power_w == Approx(2 * 4 * 100.0));                  // nameplate of both instances
  CHECK(t.power_source == "offer");
}
