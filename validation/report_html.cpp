#include "validation/report_html.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/checked_io.hpp"
#include "common/error.hpp"
#include "common/records.hpp"
#include "common/svg_chart.hpp"

namespace xpusim::validation {

namespace fs = std::filesystem;

namespace {

std::string table_html(const std::vector<std::string>& cols, const std::vector<std::vector<std::string>>& rows) {
  std::ostringstream s;
  s << "<table><tr>";
  for (const auto& c : cols) s << "<th>" << xml_escape(c) << "</th>";
  s << "</tr>\n";
  for (const auto& r : rows) {
    s << "<tr>";
    for (const auto& c : r) s << "<td>" << xml_escape(c) << "</td>";
    s << "</tr>\n";
  }
  s << "</table>\n";
  return s.str();
}

std::vector<std::vector<std::string>> group_rows(const std::vector<GroupError>& gs) {
  std::vector<std::vector<std::string>> out;
  for (const auto& g : gs) out.push_back({g.key, std::to_string(g.rows), fmt_fixed(g.mape_pct, 1), fmt_fixed(g.mean_error_pct, 1)});
  return out;
}

// Names a row in tooltips and "not drawn" lists: line, device x count, model, batch, precision, data.
std::string row_tip(const RowResult& x) {
  const ReferenceRow& w = x.row;
  return "line " + std::to_string(w.line) + ": " + w.device + (w.num_devices ? " x" + std::to_string(*w.num_devices) : "") +
         " " + w.model + (w.batch_per_device ? " b" + std::to_string(*w.batch_per_device) : "") + " " + w.precision +
         " " + w.data + " " + w.metric;
}

// The rows a chart leaves out, with the reason, listed under it.
std::string not_drawn_html(const std::string& what, const std::vector<std::string>& rows) {
  if (rows.empty()) return "";
  std::ostringstream s;
  s << "<details class=\"not-drawn\"" << (rows.size() <= 12 ? " open" : "") << "><summary>" << rows.size() << " row" << (rows.size() == 1 ? "" : "s") << " of "
    << xml_escape(what) << " not drawn (why)</summary><ul>\n";
  for (const auto& r : rows) s << "<li>" << xml_escape(r) << "</li>\n";
  s << "</ul></details>\n";
  return s.str();
}

}  // namespace

std::string report_html(const ValidationResult& r) {
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>xpusim validation</title>\n"
       "<style>body{font-family:sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse;margin:0.5em 0}"
       "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}th{background:#eee}"
       "td:first-child{text-align:left}svg{margin:0.5em 1em 0.5em 0;max-width:100%;height:auto}"
       ".charts{display:flex;flex-wrap:wrap;gap:0 1em}.chart{max-width:560px}h3{font-size:1em}"
       "details.not-drawn{font-size:0.85em;color:#444;margin-bottom:1em}</style></head><body>\n";
  h << "<h1>xpusim validation</h1>\n<p>Reference: " << xml_escape(r.reference)
    << ". Error = 100 &times; (predicted &minus; reference) / reference; MAPE = mean |error|.</p>\n";
  h << table_html({"summary", "value"},
                  {{"mape_pct", r.mape_pct ? fmt_fixed(*r.mape_pct, 2) : "n/a"},
                   {"rows_total", std::to_string(r.rows.size())},
                   {"rows_used", std::to_string(r.rows_used)},
                   {"rows_skipped", std::to_string(r.rows_skipped)},
                   {"oom_matches", std::to_string(r.oom_matches) + " / " + std::to_string(r.oom_total)}});

  // Colours by device, in sorted order so that they are stable across runs and charts; with
  // more than 8 devices, colours follow the position within each chart instead.
  std::set<std::string> devices;
  for (const auto& x : r.rows)
    if (x.used && x.error_pct) devices.insert(x.row.device);
  std::map<std::string, std::string> colour;
  size_t i = 0;
  for (const auto& d : devices) colour[d] = palette_colour(i++);
  auto recolour = [&](std::vector<SvgSeries>& ss) {
    if (devices.size() <= kMaxSeriesPerChart) return;
    for (size_t k = 0; k < ss.size(); ++k) ss[k].colour = palette_colour(k);
  };
  auto part = [](const std::string& title, size_t k, size_t n) {
    return n > 1 ? title + " (part " + std::to_string(k + 1) + " of " + std::to_string(n) + ")" : title;
  };

  // One predicted-vs-reference chart per metric (each has its own unit), series by device.
  std::vector<std::string> metrics;  // in first-seen order
  std::map<std::string, std::string> unit_of;
  for (const auto& x : r.rows)
    if (!unit_of.count(x.row.metric)) {
      metrics.push_back(x.row.metric);
      unit_of[x.row.metric] = x.row.unit;
    }
  h << "<h2>Predicted vs reference, one chart per metric</h2>\n<div class=\"charts\">\n";
  for (const auto& m : metrics) {
    h << "<div class=\"chart\">\n";
    std::map<std::string, SvgSeries> by_dev;
    std::vector<std::string> not_drawn;
    for (const auto& x : r.rows) {
      if (x.row.metric != m) continue;
      if (!x.used) {
        not_drawn.push_back(row_tip(x) + ": skipped, " + x.reason);
      } else if (!x.error_pct || !x.row.value || !x.predicted) {
        not_drawn.push_back(row_tip(x) + ": no numeric error (" + (x.match ? "oom agreement" : "no value") + ")");
      } else {
        SvgSeries& se = by_dev[x.row.device];
        se.label = x.row.device;
        se.colour = colour[x.row.device];
        se.points.push_back({*x.row.value, *x.predicted});
        se.tips.push_back(row_tip(x) + ": reference " + fmt_sig(*x.row.value, 4) + ", predicted " +
                          fmt_sig(*x.predicted, 4) + " " + x.row.unit + " (" + fmt_fixed(*x.error_pct, 1) + "%)");
      }
    }
    std::vector<SvgSeries> all;
    for (auto& [d, se] : by_dev) all.push_back(se);
    auto parts = split_series(all);
    for (size_t k = 0; k < parts.size(); ++k) {
      recolour(parts[k]);
      SvgChart sc;
      sc.title = part(m + ": predicted vs reference", k, parts.size());
      sc.x_label = "reference (" + unit_of[m] + ")";
      sc.y_label = "predicted (" + unit_of[m] + ")";
      sc.log_x = sc.log_y = sc.diagonal = true;
      sc.width = 540;
      sc.height = 380;
      h << svg_xy_chart(sc, parts[k], &not_drawn);
    }
    if (parts.empty()) h << "<h3>" << xml_escape(m) << ": no chart (no row of it was predicted)</h3>\n";
    h << not_drawn_html(m, not_drawn) << "</div>\n";
  }
  h << "</div>\n";

  h << "<h2>Error by device</h2>\n";
  std::vector<SvgBar> bars;
  for (const auto& g : r.by_device)
    bars.push_back({g.key, g.mape_pct, colour.count(g.key) ? colour[g.key] : "#888",
                    g.key + ": MAPE " + fmt_fixed(g.mape_pct, 1) + "% over " + std::to_string(g.rows) + " rows", ""});
  SvgChart bc;
  bc.title = "MAPE by device";
  bc.x_label = "device (name)";
  bc.y_label = "MAPE (%)";
  h << svg_bar_chart(bc, bars);

  // Signed error per row: x = the metric (a category), y = error in percent, series by device.
  std::map<std::string, size_t> metric_index;
  SvgChart ec;
  for (const auto& m : metrics)
    if (std::any_of(r.rows.begin(), r.rows.end(), [&](const RowResult& x) { return x.row.metric == m && x.error_pct; })) {
      size_t k = metric_index.size();
      metric_index[m] = k;
      ec.x_ticks.push_back({double(k), m});
    }
  std::map<std::string, SvgSeries> strip_by_dev;
  std::vector<std::string> strip_not_drawn;
  for (const auto& x : r.rows) {
    if (!x.used || !x.error_pct) continue;
    SvgSeries& se = strip_by_dev[x.row.device];
    se.label = x.row.device;
    se.colour = colour[x.row.device];
    // Devices side by side within their metric's column, so that points do not hide each other.
    double dx = devices.size() > 1 ? 0.5 * (double(std::distance(devices.begin(), devices.find(x.row.device))) /
                                                double(devices.size() - 1) - 0.5)
                                   : 0.0;
    se.points.push_back({double(metric_index[x.row.metric]) + dx, *x.error_pct});
    se.tips.push_back(row_tip(x) + ": error " + fmt_fixed(*x.error_pct, 1) + "%");
  }
  for (const auto& x : r.rows)
    if (x.used && !x.error_pct) strip_not_drawn.push_back(row_tip(x) + ": no percentage error (oom rows agree or not)");
  std::vector<SvgSeries> strip;
  for (auto& [d, se] : strip_by_dev) strip.push_back(se);
  auto strip_parts = split_series(strip);
  for (size_t k = 0; k < strip_parts.size(); ++k) {
    recolour(strip_parts[k]);
    ec.title = part("Signed error per row, by metric", k, strip_parts.size());
    ec.x_label = "metric (name)";
    ec.y_label = "error (%)";
    ec.zero_line = true;
    ec.width = std::min(1100, std::max(640, 110 * static_cast<int>(metric_index.size()) + 240));
    h << svg_xy_chart(ec, strip_parts[k], &strip_not_drawn);
  }
  h << not_drawn_html("signed error", strip_not_drawn);
  h << table_html({"device", "rows", "mape_pct", "mean_error_pct"}, group_rows(r.by_device));
  h << table_html({"model", "rows", "mape_pct", "mean_error_pct"}, group_rows(r.by_model));
  h << table_html({"metric", "rows", "mape_pct", "mean_error_pct"}, group_rows(r.by_metric));
  h << table_html({"framework", "rows", "mape_pct", "mean_error_pct"}, group_rows(r.by_framework));

  // Scaling, read as a ratio: per model, predicted / reference throughput against the number
  // of devices, one dot per used row, a colour per device, y = 1 and a +-10% band. Lines of
  // absolute throughput stack near-identical curves (issue 36); they stay below, folded.
  h << "<h2>Predicted / reference throughput vs number of devices</h2>\n<p>One dot per reference row; 1 = "
       "exact, the shaded band = within 10%. Rows of one device count sit side by side.</p>\n<div class=\"charts\">\n";
  struct Ratio {
    std::map<std::string, SvgSeries> by_dev;
    std::set<int> counts;
    std::vector<std::string> not_drawn;
  };
  std::map<std::string, Ratio> ratios;
  for (const auto& x : r.rows) {
    if (x.row.metric != "train_throughput") continue;
    Ratio& ra = ratios[x.row.model];
    if (!x.used) {
      ra.not_drawn.push_back(row_tip(x) + ": skipped, " + x.reason);
      continue;
    }
    if (!x.row.num_devices || !x.predicted || !x.row.value || *x.row.value <= 0) {
      ra.not_drawn.push_back(row_tip(x) + ": no device count or value");
      continue;
    }
    SvgSeries& se = ra.by_dev[x.row.device];
    se.label = x.row.device;
    se.colour = colour.count(x.row.device) ? colour[x.row.device] : "#888";
    ra.counts.insert(*x.row.num_devices);
    const double ratio = *x.predicted / *x.row.value;
    se.points.push_back({double(*x.row.num_devices), ratio});
    se.tips.push_back(row_tip(x) + ", b" + std::to_string(x.row.batch_per_device.value_or(0)) + " " + x.row.precision +
                      " " + x.row.data + ": predicted " + fmt_sig(*x.predicted, 4) + " / reference " +
                      fmt_sig(*x.row.value, 4) + " " + x.row.unit + " = " + fmt_sig(ratio, 3));
  }
  for (auto& [model, ra] : ratios) {
    std::vector<SvgSeries> all;
    for (auto& [d, se] : ra.by_dev) all.push_back(se);
    // Devices side by side around their count (a factor on the log axis), so dots of one
    // count do not hide each other.
    for (size_t k = 0; k < all.size(); ++k) {
      const double dx = all.size() > 1 ? 0.16 * (double(k) / double(all.size() - 1) - 0.5) : 0.0;
      for (auto& p : all[k].points) p.first *= std::pow(2.0, dx);
    }
    auto parts = split_series(all);
    h << "<div class=\"chart\">\n";
    for (size_t k = 0; k < parts.size(); ++k) {
      recolour(parts[k]);
      SvgChart c;
      c.title = part(model + ": predicted / reference throughput", k, parts.size());
      c.x_label = "devices (count)";
      c.y_label = "predicted / reference (ratio)";
      c.log_x = true;
      c.ratio_band = 0.1;
      for (int d : ra.counts) c.x_ticks.push_back({double(d), std::to_string(d)});
      c.width = 540;
      c.height = 340;
      h << svg_xy_chart(c, parts[k], &ra.not_drawn);
    }
    if (parts.empty()) h << "<h3>" << xml_escape(model) << ": no chart (no row of it was predicted)</h3>\n";
    h << not_drawn_html(model + " ratio", ra.not_drawn) << "</div>\n";
  }
  h << "</div>\n";

  // Scaling: one chart per model; one colour per (device, batch, precision, data), reference
  // solid, predicted dashed: 4 configurations (8 series) per chart, more are split.
  h << "<details class=\"scaling-lines\"><summary>Throughput vs number of devices (absolute: reference solid, "
       "predicted dashed)</summary>\n";
  struct Scaling {
    std::map<std::string, std::pair<SvgSeries, SvgSeries>> series;
    std::set<int> counts;
    std::string unit;
    std::vector<std::string> not_drawn;
  };
  std::map<std::string, Scaling> scaling;
  for (const auto& x : r.rows) {
    if (x.row.metric != "train_throughput") continue;
    Scaling& sc = scaling[x.row.model];
    if (!x.used) {
      sc.not_drawn.push_back(row_tip(x) + ": skipped, " + x.reason);
      continue;
    }
    if (!x.row.num_devices || !x.predicted || !x.row.value) {
      sc.not_drawn.push_back(row_tip(x) + ": no device count or value");
      continue;
    }
    std::string key = x.row.device + " b" + std::to_string(x.row.batch_per_device.value_or(0)) + " " +
                      x.row.precision + " " + x.row.data;
    auto& pair = sc.series[key];
    sc.unit = x.row.unit;
    sc.counts.insert(*x.row.num_devices);
    pair.first.label = key;
    pair.second.label = key + " (pred)";
    pair.first.points.push_back({double(*x.row.num_devices), *x.row.value});
    pair.first.tips.push_back(row_tip(x) + ": reference " + fmt_sig(*x.row.value, 4) + " " + x.row.unit);
    pair.second.points.push_back({double(*x.row.num_devices), *x.predicted});
    pair.second.tips.push_back(row_tip(x) + ": predicted " + fmt_sig(*x.predicted, 4) + " " + x.row.unit);
  }
  for (auto& [model, sc] : scaling) {
    std::vector<std::pair<SvgSeries, SvgSeries>> pairs;
    for (const auto& [key, pair] : sc.series) pairs.push_back(pair);
    const size_t per = kMaxSeriesPerChart / 2;
    const size_t n = (pairs.size() + per - 1) / per;
    for (size_t k = 0; k < n; ++k) {
      std::vector<SvgSeries> ss;
      for (size_t j = k * per; j < std::min(pairs.size(), (k + 1) * per); ++j) {
        SvgSeries a = pairs[j].first, b = pairs[j].second;
        a.colour = b.colour = palette_colour(j - k * per);
        a.line = b.line = true;
        b.dashed = true;
        ss.push_back(a);
        ss.push_back(b);
      }
      SvgChart c;
      c.title = part(model + ": throughput vs devices (solid reference, dashed predicted)", k, n);
      c.x_label = "devices (count)";
      c.y_label = "throughput (" + (sc.unit.empty() ? std::string("samples/s") : sc.unit) + ")";
      c.log_x = c.log_y = true;
      for (int d : sc.counts) c.x_ticks.push_back({double(d), std::to_string(d)});
      c.width = 760;
      h << svg_xy_chart(c, ss, &sc.not_drawn);
    }
    h << not_drawn_html(model + " scaling", sc.not_drawn);
  }
  h << "</details>\n";

  std::vector<std::vector<std::string>> skipped;
  for (const auto& x : r.rows)
    if (!x.used) skipped.push_back({std::to_string(x.row.line), x.row.device, x.row.model, x.row.metric, x.reason});
  h << "<h2>Skipped rows (" << skipped.size() << ")</h2>\n" << table_html({"line", "device", "model", "metric", "reason"}, skipped);
  h << "</body></html>\n";
  return h.str();
}

void write_report(const ValidationResult& r, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw FieldError("report", "cannot create directory '" + dir + "': " + ec.message());
  // Each file checked after writing and closing: a full disk is an error naming the file.
  try {
    write_file_checked((fs::path(dir) / "index.html").string(), [&](std::ostream& os) { os << report_html(r); });
    write_file_checked((fs::path(dir) / "validation.json").string(),
                       [&](std::ostream& os) { print_json_document(os, validation_json(r)); });
  } catch (const UserError& e) {
    throw FieldError("report", e.what());
  }
}

}  // namespace xpusim::validation
