// Output of `xpusim predict --explain`: per-op prices as a table (the 25 costliest ops and the
// totals), JSON ({"ops": [...], "totals": {...}}) or CSV (one row per op). Times in seconds.
#pragma once
#include <ostream>
#include <vector>

#include "common/output.hpp"
#include "devices/analytical/explain.hpp"

namespace xpusim::cli {

void print_explain(std::ostream& os, const std::vector<analytical::OpExplain>& ops, OutputFormat f);

}  // namespace xpusim::cli
