#include "validation/report_html.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/checked_io.hpp"
#include "common/error.hpp"
#include "validation/svg_plot.hpp"

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

}  // namespace

std::string report_html(const ValidationResult& r) {
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>xpusim validation</title>\n"
       "<style>body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;margin:0.5em 0}"
       "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}th{background:#eee}"
       "td:first-child{text-align:left}svg{margin:0.5em 1em 0.5em 0}</style></head><body>\n";
  h << "<h1>xpusim validation</h1>\n<p>Reference: " << xml_escape(r.reference)
    << ". Error = 100 &times; (predicted &minus; reference) / reference; MAPE = mean |error|.</p>\n";
  h << table_html({"summary", "value"},
                  {{"mape_pct", r.mape_pct ? fmt_fixed(*r.mape_pct, 2) : "n/a"},
                   {"rows_total", std::to_string(r.rows.size())},
                   {"rows_used", std::to_string(r.rows_used)},
                   {"rows_skipped", std::to_string(r.rows_skipped)},
                   {"oom_matches", std::to_string(r.oom_matches) + " / " + std::to_string(r.oom_total)}});

  // Colours by device, in sorted order so that they are stable across runs.
  std::set<std::string> devices;
  for (const auto& x : r.rows)
    if (x.used && x.error_pct) devices.insert(x.row.device);
  std::map<std::string, std::string> colour;
  size_t i = 0;
  for (const auto& d : devices) colour[d] = palette_colour(i++);

  h << "<h2>Predicted vs reference</h2>\n";
  std::map<std::string, std::vector<std::pair<double, double>>> by_dev;
  for (const auto& x : r.rows)
    if (x.used && x.error_pct && x.row.value) by_dev[x.row.device].push_back({*x.row.value, *x.predicted});
  std::vector<SvgSeries> scatter;
  for (const auto& [d, pts] : by_dev) scatter.push_back({d, colour[d], pts, true, false, false});
  SvgChart sc;
  sc.title = "Predicted vs reference (all metrics with an error)";
  sc.x_label = "reference";
  sc.y_label = "predicted";
  sc.log_x = sc.log_y = sc.diagonal = true;
  h << svg_xy_chart(sc, scatter);

  h << "<h2>Error by device</h2>\n";
  std::vector<SvgBar> bars;
  for (const auto& g : r.by_device) bars.push_back({g.key, g.mape_pct, colour.count(g.key) ? colour[g.key] : "#888"});
  SvgChart bc;
  bc.title = "MAPE by device";
  bc.x_label = "device";
  bc.y_label = "MAPE (%)";
  h << svg_bar_chart(bc, bars);
  std::vector<SvgSeries> strip;
  for (const auto& [d, unused] : by_dev) {
    SvgSeries s{d, colour[d], {}, true, false, false};
    for (const auto& x : r.rows)
      if (x.used && x.error_pct && x.row.device == d) s.points.push_back({*x.row.value, *x.error_pct});
    strip.push_back(s);
  }
  SvgChart ec;
  ec.title = "Signed error per row";
  ec.x_label = "reference value";
  ec.y_label = "error (%)";
  ec.log_x = true;
  ec.zero_line = true;
  h << svg_xy_chart(ec, strip);
  h << table_html({"device", "rows", "mape_pct", "mean_error_pct"}, group_rows(r.by_device));
  h << table_html({"model", "rows", "mape_pct", "mean_error_pct"}, group_rows(r.by_model));
  h << table_html({"metric", "rows", "mape_pct", "mean_error_pct"}, group_rows(r.by_metric));
  h << table_html({"framework", "rows", "mape_pct", "mean_error_pct"}, group_rows(r.by_framework));

  // Scaling: one chart per model; one series per (device, batch, precision, data, setup),
  // reference solid, predicted dashed.
  h << "<h2>Throughput vs number of devices</h2>\n";
  std::map<std::string, std::map<std::string, std::pair<SvgSeries, SvgSeries>>> scaling;
  for (const auto& x : r.rows) {
    if (!x.used || x.row.metric != "train_throughput" || !x.row.num_devices || !x.predicted) continue;
    std::string key = x.row.device + " b" + std::to_string(x.row.batch_per_device.value_or(0)) + " " +
                      x.row.precision + " " + x.row.data;
    auto& pair = scaling[x.row.model][key];
    pair.first.label = key;
    pair.second.label = key + " (pred)";
    pair.first.points.push_back({double(*x.row.num_devices), *x.row.value});
    pair.second.points.push_back({double(*x.row.num_devices), *x.predicted});
  }
  for (const auto& [model, series] : scaling) {
    std::vector<SvgSeries> ss;
    size_t k = 0;
    for (const auto& [key, pair] : series) {
      SvgSeries a = pair.first, b = pair.second;
      a.colour = b.colour = palette_colour(k++);
      a.line = b.line = true;
      b.dashed = true;
      ss.push_back(a);
      ss.push_back(b);
    }
    SvgChart c;
    c.title = model + ": throughput vs devices (solid reference, dashed predicted)";
    c.x_label = "devices";
    c.y_label = "samples/s";
    c.log_x = c.log_y = true;
    c.width = 760;
    c.height = std::max(420, 60 + 15 * static_cast<int>(ss.size()));
    h << svg_xy_chart(c, ss);
  }

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
                       [&](std::ostream& os) { print_json(os, validation_json(r)); });
  } catch (const UserError& e) {
    throw FieldError("report", e.what());
  }
}

}  // namespace xpusim::validation
