// What a user can name on the other commands (`xpusim list KIND`, Python's xpusim.list):
// devices, systems, clusters, studies (the YAML files under the config root), models (the zoo),
// frameworks (the profiles under configs/frameworks/, with the names each answers to)
// and offers (configs/pricing/ or a SkyPilot vms.csv, each mapped to its xpusim device and
// system, with date, source and age). In the cost library because offers are prices; it is
// the lowest layer that sees both the zoo and the price catalogs.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace xpusim::cost {

// The kinds list_rows knows, in the order help texts show them.
const std::vector<std::string>& listing_kinds();

struct ListingOptions {
  std::string catalog;  // offers: a SkyPilot vms.csv instead of configs/pricing/ (empty = the default catalog)
  std::string region;   // offers: only this region (empty = all; with a catalog: each instance's cheapest)
};

struct Listing {
  nlohmann::json rows = nlohmann::json::array();  // one object per name (offers: one per offer)
  std::vector<std::string> warnings;              // offers: one line per catalog and date older than a year
  std::vector<std::string> table_columns;         // the columns a table of the rows shows
};

// FieldError("kind") for an unknown kind; FieldError("catalog") when a catalog or region is
// given for a kind other than offers.
Listing list_rows(const std::string& kind, const ListingOptions& o = {});

}  // namespace xpusim::cost
