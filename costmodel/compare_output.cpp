// Output of a study: text table / Markdown / CSV rows, and a self-contained SVG (or HTML
// wrapping it) with bars of hours and dollars to target per row. Deterministic: fixed number
// formatting, rows in study order.
#include <algorithm>
#include <sstream>

#include "costmodel/compare.hpp"

namespace xpusim::cost {

namespace {
std::string cell(const std::optional<double>& v, int sig = 4) { return v ? fmt_sig(*v, sig) : "-"; }

}  // namespace

void print_compare(std::ostream& os, const CompareResult& r, OutputFormat f) {
  if (f == OutputFormat::json) {
    print_json(os, r.to_json());
    return;
  }
  // The tokens/s column only appears when a row has it (Transformer studies), so the tables
  // of every other study keep their shape.
  bool tokens = false;
  for (const auto& row : r.rows) tokens = tokens || row.throughput_tokens_per_s.has_value();
  std::vector<std::string> head{"option", "target", "throughput_samples_per_s"};
  if (tokens) head.push_back("throughput_tokens_per_s");
  for (const char* h : {"price_usd_per_h", "samples_per_s_per_usd_per_h", "epochs_to_target", "hours_to_target",
                        "cost_to_target_usd", "energy_kwh", "breakeven_runs", "note"})
    head.push_back(h);
  Table t(head);
  for (const auto& row : r.rows) {
    std::vector<std::string> cells{row.option, row.target, cell(row.throughput_samples_per_s)};
    if (tokens) cells.push_back(cell(row.throughput_tokens_per_s));
    for (const std::string& c : {cell(row.price_usd_per_h), cell(row.samples_per_s_per_usd_per_h),
                                 cell(row.epochs_to_target), cell(row.hours_to_target), cell(row.cost_to_target_usd),
                                 cell(row.energy_kwh), cell(row.breakeven_runs), row.error})
      cells.push_back(c);
    t.add(cells);
  }
  if (f == OutputFormat::table) {
    os << r.study << (r.description.empty() ? "" : ": " + r.description) << "\n";
    if (!r.source.empty()) os << "source: " << r.source << "\n";
  }
  t.print(os, f);
}

std::string compare_chart_svg(const CompareResult& r) {
  // Two panels side by side: hours to target and dollars to target, one bar per row.
  const int row_h = 22, label_w = 330, panel_w = 300, gap = 40, top = 50;
  const int n = int(r.rows.size());
  const int width = label_w + 2 * panel_w + gap + 90;
  const int height = top + n * row_h + 40;
  double max_h = 0, max_c = 0;
  for (const auto& row : r.rows) {
    if (row.hours_to_target) max_h = std::max(max_h, *row.hours_to_target);
    if (row.cost_to_target_usd) max_c = std::max(max_c, *row.cost_to_target_usd);
  }
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"10\" y=\"20\" font-size=\"15\" font-weight=\"bold\">" << xml_escape(r.study) << "</text>\n";
  const int x_h = label_w, x_c = label_w + panel_w + gap;
  s << "<text x=\"" << x_h << "\" y=\"" << top - 10 << "\" font-weight=\"bold\">hours to target</text>\n";
  s << "<text x=\"" << x_c << "\" y=\"" << top - 10 << "\" font-weight=\"bold\">USD to target</text>\n";
  for (int i = 0; i < n; ++i) {
    const auto& row = r.rows[i];
    int y = top + i * row_h;
    s << "<text x=\"10\" y=\"" << y + 15 << "\">" << xml_escape(row.option + "  " + row.target) << "</text>\n";
    auto bar = [&](int x0, const std::optional<double>& v, double vmax, const char* color) {
      if (!v || vmax <= 0) {
        s << "<text x=\"" << x0 << "\" y=\"" << y + 15 << "\" fill=\"#999\">n/a</text>\n";
        return;
      }
      int w = std::max(1, int(*v / vmax * (panel_w - 60)));
      s << "<rect x=\"" << x0 << "\" y=\"" << y + 3 << "\" width=\"" << w << "\" height=\"" << row_h - 6
        << "\" fill=\"" << color << "\"/>\n";
      s << "<text x=\"" << x0 + w + 4 << "\" y=\"" << y + 15 << "\">" << fmt_sig(*v, 3) << "</text>\n";
    };
    bar(x_h, row.hours_to_target, max_h, "#4e79a7");
    bar(x_c, row.cost_to_target_usd, max_c, "#f28e2b");
  }
  s << "</svg>\n";
  return s.str();
}

std::string compare_chart_html(const CompareResult& r) {
  return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + xml_escape(r.study) +
         "</title></head><body>\n" + compare_chart_svg(r) + "</body></html>\n";
}

}  // namespace xpusim::cost
