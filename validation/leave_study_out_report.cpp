// The report of leave_one_study_out (validation/leave_study_out.hpp): JSON, CSV and the table.
#include "validation/leave_study_out.hpp"

#include "common/output.hpp"
#include "common/records.hpp"

namespace xpusim::validation {

nlohmann::json leave_one_study_out_json(const std::vector<StudyHoldOut>& r) {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json studies = nlohmann::json::array();
  for (const auto& h : r) {
    nlohmann::json s;
    s["study"] = h.study;
    s["rows"] = h.rows;
    s["rows_predicted"] = h.rows_predicted;
    s["mape_pct_held_out"] = opt(h.mape_pct_held_out);
    s["mape_pct_in_sample"] = opt(h.mape_pct_in_sample);
    nlohmann::json m = nlohmann::json::object();
    for (const auto& g : h.by_metric_held_out) m[g.key] = {{"rows", g.rows}, {"mape_pct", g.mape_pct}};
    s["by_metric_held_out"] = m;
    nlohmann::json sets = nlohmann::json::array();
    for (const auto& c : h.sets) {
      nlohmann::json x = {{"set", c.set}, {"action", c.action}, {"rows", c.rows}};
      nlohmann::json p = nlohmann::json::object();
      for (const auto& q : c.params)
        p[q.key] = {{"today", q.initial}, {"held_out", q.fitted}, {"no_effect", q.no_effect}};
      x["params"] = p;
      if (!c.reason.empty()) x["reason"] = c.reason;
      sets.push_back(x);
    }
    s["sets"] = sets;
    studies.push_back(s);
  }
  return {{"leave_one_study_out", studies}, {"mape_pct_held_out", opt(leave_one_study_out_mape(r))}};
}

void print_leave_one_study_out(std::ostream& os, const std::vector<StudyHoldOut>& r, OutputFormat f) {
  if (f == OutputFormat::json) {
    print_json_document(os, leave_one_study_out_json(r));
    return;
  }
  if (f == OutputFormat::csv) {
    nlohmann::json rows = nlohmann::json::array();
    const nlohmann::json doc = leave_one_study_out_json(r);  // kept alive: the loop refers into it
    for (const auto& s : doc["leave_one_study_out"]) {
      nlohmann::json x = s;
      x.erase("sets");
      rows.push_back(x);
    }
    print_csv_records(os, rows, {"study"});
    return;
  }
  auto opt = [](const std::optional<double>& v) { return v ? fmt_fixed(*v, 2) : std::string("n/a"); };
  os << "Leave one study out: the whole calibration redone without the study, then its rows predicted\n";
  Table t({"study", "rows", "mape_pct_held_out", "mape_pct_in_sample", "constant sets refit / unfitted"});
  for (const auto& h : r) {
    std::string sets;
    for (const auto& c : h.sets)
      if (c.action != "unchanged") sets += (sets.empty() ? "" : ", ") + c.set.substr(c.set.find(' ') + 1) + " " + c.action;
    t.add({h.study.size() > 48 ? h.study.substr(0, 45) + "..." : h.study,
           std::to_string(h.rows_predicted) + "/" + std::to_string(h.rows), opt(h.mape_pct_held_out),
           opt(h.mape_pct_in_sample), sets.empty() ? "-" : sets});
  }
  t.print(os, f);
  os << "mape_pct_held_out over every study's rows: " << opt(leave_one_study_out_mape(r)) << "\n";
  for (const auto& h : r) {
    bool any = false;
    for (const auto& c : h.sets) any = any || c.action != "unchanged";
    if (!any) continue;
    os << "\nWithout " << h.study << "\n";
    Table d({"constant set", "action", "rows", "constant", "today", "without the study"});
    for (const auto& c : h.sets) {
      if (c.action == "unchanged") continue;
      for (const auto& p : c.params)
        d.add({c.set, c.action, std::to_string(c.rows), p.key, fmt_sig(p.initial, 5),
               fmt_sig(p.fitted, 5) + (p.no_effect ? " (kept: no row responds)" : "")});
    }
    d.print(os, f);
  }
}

}  // namespace xpusim::validation
