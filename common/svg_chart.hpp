// The one chart module of xpusim (validation report, compare --chart, sweep --chart):
// self-contained SVG, no plotting library. Every chart has a viewBox, a title, axis labels
// (callers put the unit in them: "throughput (samples/s)"), at most kMaxSeriesPerChart
// series (callers split beyond that: split_series), a <title> tooltip on every mark, and one
// palette. Points a chart cannot draw are returned with the reason, for the caller to list.
// Output depends only on the inputs (fixed number formatting), so charts are reproducible.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "common/output.hpp"

namespace xpusim {

inline constexpr size_t kMaxSeriesPerChart = 8;  // one colour each: the palette has 8
// Charts widen for long legend labels up to this many px (a 1,100 px window shows them
// whole); longer labels wrap. kLegendCharPx: the width of one 11 px sans-serif character.
inline constexpr int kMaxChartWidth = 1100;
inline constexpr double kLegendCharPx = 6.5;

// `text` split at spaces into lines of at most `width` characters (a longer word is cut).
std::vector<std::string> wrap_words(const std::string& text, size_t width);

// The colour of the i-th series or category (Okabe & Ito 2008, colour-blind friendly); the
// palette repeats after 8, which is why a chart holds at most 8 series.
std::string palette_colour(size_t i);

struct SvgSeries {
  std::string label;
  std::string colour;                              // CSS colour (palette_colour)
  std::vector<std::pair<double, double>> points;   // (x, y)
  std::vector<std::string> tips;                   // per point: tooltip naming the row (may be empty)
  bool markers = true;
  bool line = false;                               // connect points in x order
  bool dashed = false;
};

struct SvgChart {
  std::string title;
  std::string x_label, y_label;                    // with units, e.g. "devices (count)"
  bool log_x = false, log_y = false;
  bool diagonal = false;   // draw y = x (predicted vs reference)
  bool zero_line = false;  // draw y = 0
  // > 0: a ratio chart (predicted / reference): draw y = 1 and shade 1 +- ratio_band (0.1 =
  // within 10%); the y range always holds the band.
  double ratio_band = 0;
  // Ticks at these x values with these labels (e.g. the data's device counts 1, 2, 4, 8, or
  // category names); empty = automatic ticks.
  std::vector<std::pair<double, std::string>> x_ticks;
  // svg_hbar_chart: > 0, the value axis reaches at least this and the row labels take at least
  // this many characters, so that facets of one metric (charts split by kMaxSeriesPerChart)
  // share a scale and their bars start at the same x.
  double bar_value_max = 0;
  size_t bar_label_chars = 0;
  int width = 640, height = 420;
};

// Draws the chart; each point that cannot be drawn (not finite, or <= 0 on a log axis) is
// appended to *not_drawn as "tip: reason". More than kMaxSeriesPerChart series is a bug
// (InternalError): split them first.
std::string svg_xy_chart(const SvgChart& chart, const std::vector<SvgSeries>& series,
                         std::vector<std::string>* not_drawn = nullptr);

struct SvgBar {
  std::string label;
  double value = 0;
  std::string colour;
  std::string tip;  // tooltip; default: label and value
  std::string series;  // svg_hbar_chart: the series (colour) the bar belongs to; at most 8 per chart
};
// Vertical bars, one per category (x: category, y: value).
std::string svg_bar_chart(const SvgChart& chart, const std::vector<SvgBar>& bars);
// Horizontal bars, one per row (y: row label, x: value); `notes` are printed under the plot
// (why rows have no bar). The chart's x_label names the metric with its unit.
std::string svg_hbar_chart(const SvgChart& chart, const std::vector<SvgBar>& bars,
                           const std::vector<std::string>& notes);

// Splits series into groups of at most kMaxSeriesPerChart (a facet per group).
std::vector<std::vector<SvgSeries>> split_series(const std::vector<SvgSeries>& series,
                                                 size_t per_chart = kMaxSeriesPerChart);

}  // namespace xpusim
