// The conclusion a study is run for, derived from its rows: per target, the cheapest and the
// fastest option to it, by how much they beat the runner-up, and what bounds them (the step's
// bottleneck resource, or the price per hour). `xpusim compare` prints it above the table.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "compare/compare.hpp"

namespace xpusim::cost {

struct Pick {
  int row = -1;             // index into CompareResult::rows; -1 = no row reaches the target
  int runner_up = -1;       // the best row on other hardware (device, count, system); -1 = none
  double value = 0;         // USD (cheapest) or hours (fastest) of `row`
  double runner_up_value = 0;
  std::string why;          // "bound by ..." sentence, derived from the rows' fields
  // Cheapest only: the dollars billing rounding can move either row by (billed minus used
  // hours x $/h, plus half a cent of printing). A gap no larger is not a finding: "tied".
  double rounding_usd = 0;
};

// Dollars a row's billing rounding adds over its prorated cost, plus the half cent of
// printing cents: the smallest cost difference a summary may state.
double billing_rounding_usd(const CompareRow& r);

struct TargetConclusion {
  std::string target;
  Pick cheapest, fastest;
  int rows = 0;             // rows of this target
  std::vector<std::pair<std::string, int>> not_costed;  // reason -> rows without a cost or time
};

std::vector<TargetConclusion> conclude(const CompareResult& r);

// What a bottleneck resource name means to a reader: "mxu" -> "MXU (matrix units, compute)".
std::string bound_phrase(const std::string& bottleneck);

// The conclusions as short lines of text (Markdown list items when `markdown`).
std::vector<std::string> conclusion_lines(const CompareResult& r, const std::vector<TargetConclusion>& c,
                                          bool markdown);

}  // namespace xpusim::cost
