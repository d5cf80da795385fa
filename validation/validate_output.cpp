// Printing a ValidationResult: JSON (stable field names with units), CSV (one line per row)
// and aligned tables (rows, skipped rows with reasons, MAPE tables).
#include <cmath>
#include <cstdio>
#include <map>

#include "common/records.hpp"
#include "validation/validate.hpp"

namespace xpusim::validation {

namespace {

nlohmann::json opt_num(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

nlohmann::json groups_json(const std::vector<GroupError>& gs) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& g : gs) j[g.key] = {{"rows", g.rows}, {"mape_pct", g.mape_pct}, {"mean_error_pct", g.mean_error_pct}};
  return j;
}

std::string num_or_empty(const std::optional<double>& v, int sig = 4) { return v ? fmt_sig(*v, sig) : ""; }

}  // namespace

nlohmann::json validation_json(const ValidationResult& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& x : r.rows) {
    const ReferenceRow& w = x.row;
    nlohmann::json j;
    j["line"] = w.line;
    j["source"] = w.source;
    j["device"] = w.device;
    j["num_devices"] = w.num_devices ? nlohmann::json(*w.num_devices) : nlohmann::json(nullptr);
    j["setup"] = w.setup;
    j["framework"] = w.framework;
    j["model"] = w.model;
    j["dataset"] = w.dataset;
    j["batch_per_device"] = w.batch_per_device ? nlohmann::json(*w.batch_per_device) : nlohmann::json(nullptr);
    j["precision"] = w.precision;
    j["data"] = w.data;
    j["metric"] = w.metric;
    j["unit"] = w.unit;
    j["status"] = x.used ? "used" : "skipped";
    // Every row carries every field (null when it does not apply), so CSV has one schema.
    j["reason"] = x.used ? nlohmann::json(nullptr) : nlohmann::json(x.reason);
    j["engine"] = x.engine;
    j["reference"] = opt_num(w.value);
    j["predicted"] = opt_num(x.predicted);
    j["match"] = x.match ? nlohmann::json(*x.match) : nlohmann::json(nullptr);
    j["error_pct"] = opt_num(x.error_pct);
    rows.push_back(j);
  }
  nlohmann::json s;
  s["mape_pct"] = opt_num(r.mape_pct);
  s["rows_total"] = static_cast<int>(r.rows.size());
  s["rows_used"] = r.rows_used;
  s["rows_skipped"] = r.rows_skipped;
  s["oom_matches"] = r.oom_matches;
  s["oom_total"] = r.oom_total;
  s["by_device"] = groups_json(r.by_device);
  s["by_model"] = groups_json(r.by_model);
  s["by_metric"] = groups_json(r.by_metric);
  s["by_framework"] = groups_json(r.by_framework);
  // Skip reasons counted, so a reader sees at a glance why rows were not used.
  std::map<std::string, int> reasons;
  for (const auto& x : r.rows)
    if (!x.used) ++reasons[x.reason];
  s["skipped_reasons"] = reasons;
  return {{"reference", r.reference}, {"rows", rows}, {"summary", s}};
}

void print_validation(std::ostream& os, const ValidationResult& r, OutputFormat f) {
  if (f == OutputFormat::json) {
    print_json_document(os, validation_json(r));
    return;
  }
  if (f == OutputFormat::csv) {  // one row per reference row, the JSON's `rows`
    print_csv_records(os, validation_json(r)["rows"], {"line", "source", "device", "num_devices", "setup", "framework",
                                                       "model", "dataset", "batch_per_device", "precision", "data",
                                                       "metric", "unit", "status", "reason", "engine", "reference",
                                                       "predicted", "error_pct", "match"});
    return;
  }
  Table used({"line", "device", "n", "setup", "model", "batch", "precision", "data", "metric", "reference", "predicted",
              "error_pct"});
  Table skipped({"line", "device", "model", "metric", "reason"});
  for (const auto& x : r.rows) {
    const ReferenceRow& w = x.row;
    if (!x.used) {
      skipped.add({std::to_string(w.line), w.device, w.model, w.metric, x.reason});
      continue;
    }
    std::string err = x.match ? (*x.match ? "match" : "MISMATCH") : (x.error_pct ? fmt_fixed(*x.error_pct, 1) : "");
    used.add({std::to_string(w.line), w.device, w.num_devices ? std::to_string(*w.num_devices) : "", w.setup, w.model,
              w.batch_per_device ? std::to_string(*w.batch_per_device) : "", w.precision, w.data, w.metric,
              num_or_empty(w.value), num_or_empty(x.predicted), err});
  }
  if (!used.rows.empty()) {
    os << "Rows (error_pct = 100 * (predicted - reference) / reference)\n";
    used.print(os, f);
    os << "\n";
  }
  if (!skipped.rows.empty()) {
    os << "Skipped rows (" << skipped.rows.size() << ")\n";
    skipped.print(os, f);
    os << "\n";
  }
  auto group_table = [&](const char* title, const std::vector<GroupError>& gs) {
    if (gs.empty()) return;
    Table t({title, "rows", "mape_pct", "mean_error_pct"});
    for (const auto& g : gs) t.add({g.key, std::to_string(g.rows), fmt_fixed(g.mape_pct, 1), fmt_fixed(g.mean_error_pct, 1)});
    t.print(os, f);
    os << "\n";
  };
  group_table("device", r.by_device);
  group_table("model", r.by_model);
  group_table("metric", r.by_metric);
  group_table("framework", r.by_framework);
  Table s({"summary", "value"});
  s.add({"mape_pct", r.mape_pct ? fmt_fixed(*r.mape_pct, 2) : "n/a"});
  s.add({"rows_total", std::to_string(r.rows.size())});
  s.add({"rows_used", std::to_string(r.rows_used)});
  s.add({"rows_skipped", std::to_string(r.rows_skipped)});
  s.add({"oom_matches", std::to_string(r.oom_matches) + "/" + std::to_string(r.oom_total)});
  s.print(os, f);
}

}  // namespace xpusim::validation
