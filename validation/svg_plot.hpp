// A few self-contained SVG charts for the validation report (no plotting library): an x/y
// chart with optional log axes (scatter points and/or lines) and a vertical bar chart.
// Output depends only on the inputs (fixed number formatting), so reports are reproducible.
#pragma once
#include "common/output.hpp"
#include <string>
#include <utility>
#include <vector>

namespace xpusim::validation {

struct SvgSeries {
  std::string label;
  std::string colour;                              // CSS colour
  std::vector<std::pair<double, double>> points;   // (x, y); non-positive values are dropped on log axes
  bool markers = true;
  bool line = false;                               // connect points in x order
  bool dashed = false;
};

struct SvgChart {
  std::string title;
  std::string x_label, y_label;
  bool log_x = false, log_y = false;
  bool diagonal = false;   // draw y = x (predicted vs reference)
  bool zero_line = false;  // draw y = 0
  int width = 640, height = 420;
};

std::string svg_xy_chart(const SvgChart& chart, const std::vector<SvgSeries>& series);

struct SvgBar {
  std::string label;
  double value = 0;
  std::string colour;
};
std::string svg_bar_chart(const SvgChart& chart, const std::vector<SvgBar>& bars);

// The colour of the i-th category (a fixed, colour-blind-friendly palette; Okabe & Ito 2008).
std::string palette_colour(size_t i);
using xpusim::xml_escape;  // common/output.hpp

}  // namespace xpusim::validation
