// `compare --chart`: one horizontal bar chart per metric (hours to target, USD to target,
// throughput), one bar per row coloured by option, the reason listed under each chart for
// every row without a bar. Standalone SVG: the charts stacked in one picture with a viewBox.
#include <algorithm>
#include <functional>
#include <map>
#include <sstream>

#include "common/svg_chart.hpp"
#include "compare/compare.hpp"

namespace xpusim::cost {

namespace {

struct Metric {
  std::string title, axis, unit;
  std::function<std::optional<double>(const CompareRow&)> value;
};

struct Chart {
  std::string svg;
  int width = 0, height = 0;
};

int attr(const std::string& svg, const std::string& name) {
  auto p = svg.find(" " + name + "=\"");
  return p == std::string::npos ? 0 : std::stoi(svg.substr(p + name.size() + 3));
}

std::vector<Chart> compare_charts(const CompareResult& r) {
  const std::vector<Metric> metrics = {
      {"hours to target", "hours to target (h)", "h", [](const CompareRow& x) { return x.hours_to_target; }},
      {"cost to target", "cost to target (USD)", "USD", [](const CompareRow& x) { return x.cost_to_target_usd; }},
      {"throughput", "throughput (samples/s)", "samples/s", [](const CompareRow& x) { return x.throughput_samples_per_s; }},
  };
  // Colour per option, in study order; options beyond 8 go to further charts (one colour each).
  std::vector<std::string> options;
  for (const auto& row : r.rows)
    if (std::find(options.begin(), options.end(), row.option) == options.end()) options.push_back(row.option);
  const size_t parts = (options.size() + kMaxSeriesPerChart - 1) / kMaxSeriesPerChart;
  std::vector<Chart> out;
  for (const auto& m : metrics) {
    // One scale and one label column for all the facets of a metric: bars compare across them.
    double value_max = 0;
    size_t label_chars = 0;
    for (const auto& row : r.rows) {
      if (auto v = m.value(row)) value_max = std::max(value_max, *v);
      label_chars = std::max(label_chars, row.option.size() + 3 + row.target.size());
    }
    for (size_t part = 0; part < std::max<size_t>(parts, 1); ++part) {
      std::vector<SvgBar> bars;
      std::vector<std::string> notes;
      std::vector<std::pair<std::string, std::string>> not_drawn;  // reason, its rows
      for (const auto& row : r.rows) {
        size_t k = static_cast<size_t>(std::find(options.begin(), options.end(), row.option) - options.begin());
        if (k / kMaxSeriesPerChart != part) continue;
        std::string label = row.option + " / " + row.target;
        auto v = m.value(row);
        if (v) {
          bars.push_back({label, *v, palette_colour(k % kMaxSeriesPerChart),
                          label + ": " + fmt_sig(*v, 4) + " " + m.unit +
                              (row.bottleneck.empty() ? "" : ", bound by " + row.bottleneck),
                          row.option});
        } else {
          // One line per reason, naming its rows: eight rows without a cost for one reason
          // read as one note, not eight.
          const std::string why = row.message().empty() ? "no value" : row.message();
          auto it = std::find_if(not_drawn.begin(), not_drawn.end(), [&](const auto& x) { return x.first == why; });
          if (it == not_drawn.end()) not_drawn.push_back({why, label});
          else it->second += ", " + label;
        }
      }
      for (const auto& [why, rows] : not_drawn) notes.push_back("not drawn (" + why + "): " + rows);
      if (bars.empty() && notes.empty()) continue;
      SvgChart c;
      c.title = r.study + ": " + m.title +
                (parts > 1 ? " (options " + std::to_string(part * kMaxSeriesPerChart + 1) + " to " +
                                 std::to_string(std::min(options.size(), (part + 1) * kMaxSeriesPerChart)) + ")"
                           : "");
      c.x_label = m.axis;
      c.y_label = "row (option / target)";
      if (parts > 1) c.bar_value_max = value_max, c.bar_label_chars = label_chars;
      std::string svg = svg_hbar_chart(c, bars, notes);
      out.push_back({svg, attr(svg, "width"), attr(svg, "height")});
    }
  }
  return out;
}

}  // namespace

std::string compare_chart_svg(const CompareResult& r) {
  std::vector<Chart> charts = compare_charts(r);
  int w = 0, h = 0;
  for (const auto& c : charts) {
    w = std::max(w, c.width);
    h += c.height;
  }
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << h << "\" viewBox=\"0 0 " << w
    << " " << h << "\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  int y = 0;
  for (const auto& c : charts) {
    // A nested <svg> keeps its own viewBox; it is placed by x/y.
    s << "<g transform=\"translate(0," << y << ")\">\n" << c.svg << "</g>\n";
    y += c.height;
  }
  s << "</svg>\n";
  return s.str();
}

std::string compare_chart_html(const CompareResult& r) {
  std::string body;
  for (const auto& c : compare_charts(r)) body += c.svg;
  return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + xml_escape(r.study) +
         "</title></head><body>\n" + body + "</body></html>\n";
}

}  // namespace xpusim::cost
