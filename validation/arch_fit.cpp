// Per-generation fits of the kernel model's constants and the leave-one-architecture-out check.
#include "validation/arch_fit.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "devices/analytical/gpu_arch_spec.hpp"
#include "validation/graph_cache.hpp"
#include "validation/metrics.hpp"

namespace xpusim::validation {

namespace {

CalibrateOptions options_for(const std::vector<std::string>& archs, int max_evaluations,
                             const std::vector<std::string>& base_overrides) {
  CalibrateOptions o;
  o.architectures = archs;
  o.device = "architecture " + archs.front();
  o.max_evaluations = max_evaluations;
  o.base_overrides = base_overrides;
  o.predict = graph_caching_predictor();
  return o;
}

std::string fmt(const std::optional<double>& v) {
  if (!v) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", *v);
  return b;
}

std::string params_text(const std::vector<FitParam>& ps) {
  std::string s;
  for (const auto& p : ps) {
    char b[96];
    std::snprintf(b, sizeof b, "%s%s=%.4g", s.empty() ? "" : " ", p.key.c_str(), p.fitted);
    s += b;
  }
  return s;
}

}  // namespace

ArchFitReport fit_architectures(const std::vector<ReferenceRow>& rows, std::vector<std::string> archs, bool loo,
                                int max_evaluations, const std::vector<std::string>& base_overrides) {
  if (archs.empty()) {
    for (const auto& a : analytical::arch_names())
      if (analytical::load_arch_spec(a).kernel_model && !architecture_fit_rows(rows, {a}).empty()) archs.push_back(a);
    if (archs.empty()) throw FieldError("architecture", "no kernel-model architecture has rows in the reference");
  }
  for (const auto& a : archs)
    if (!analytical::load_arch_spec(a).kernel_model)
      throw FieldError("architecture", "'" + a + "' is priced by the roofline (kernel_model: false): nothing to fit");
  ArchFitReport rep;
  rep.architectures = archs;
  const std::vector<ReferenceRow> fit_rows_all = architecture_fit_rows(rows, archs);
  if (fit_rows_all.empty()) throw FieldError("architecture", "no row of these architectures has a fit metric");
  CalibrateOptions o = options_for(archs, max_evaluations, base_overrides);
  rep.fit = fit_device(fit_rows_all, o);
  for (const auto& a : archs) {
    std::vector<double> errs;
    for (const auto& x : rep.fit.after.rows)
      if (x.used && x.error_pct && device_architecture(x.row.device) == a) errs.push_back(*x.error_pct);
    rep.mape_by_architecture.emplace_back(a, mape_pct(errs));
  }
  if (!loo) return rep;
  for (const auto& held : archs) {
    ArchHoldOut h;
    h.architecture = held;
    for (const auto& a : archs)
      if (a != held) h.fitted_on.push_back(a);
    const std::vector<ReferenceRow> test = architecture_fit_rows(rows, {held});
    h.rows_held_out = static_cast<int>(test.size());
    if (h.fitted_on.empty()) {
      h.reason = "no other architecture has rows to fit on";
      rep.leave_one_out.push_back(h);
      continue;
    }
    try {
      CalibrateOptions train = options_for(h.fitted_on, max_evaluations, base_overrides);
      FitResult f = fit_device(architecture_fit_rows(rows, h.fitted_on), train);
      h.params = f.params;
      h.mape_pct_in_fit = f.after.mape_pct;
      // The held-out generation's devices take the constants fitted on the others.
      CalibrateOptions test_o = options_for({held}, max_evaluations, base_overrides);
      h.mape_pct_held_out = run_with(test, test_o, f.params).mape_pct;
    } catch (const UserError& e) {
      h.reason = e.what();
    }
    rep.leave_one_out.push_back(h);
  }
  return rep;
}

void print_architecture_fit(std::ostream& os, const ArchFitReport& r, OutputFormat f) {
  if (f == OutputFormat::json) {
    nlohmann::ordered_json j;
    j["architectures"] = r.architectures;
    nlohmann::ordered_json ps = nlohmann::ordered_json::object();
    for (const auto& p : r.fit.params) ps[p.key] = {{"initial", p.initial}, {"fitted", p.fitted}};
    j["params"] = ps;
    j["mape_pct_before"] = r.fit.before.mape_pct ? nlohmann::ordered_json(*r.fit.before.mape_pct) : nullptr;
    j["mape_pct_after"] = r.fit.after.mape_pct ? nlohmann::ordered_json(*r.fit.after.mape_pct) : nullptr;
    nlohmann::ordered_json by = nlohmann::ordered_json::object();
    for (const auto& [a, m] : r.mape_by_architecture) by[a] = m ? nlohmann::ordered_json(*m) : nullptr;
    j["mape_pct_by_architecture"] = by;
    nlohmann::ordered_json loo = nlohmann::ordered_json::array();
    for (const auto& h : r.leave_one_out) {
      nlohmann::ordered_json e;
      e["architecture"] = h.architecture;
      e["fitted_on"] = h.fitted_on;
      e["rows_held_out"] = h.rows_held_out;
      nlohmann::ordered_json hp = nlohmann::ordered_json::object();
      for (const auto& p : h.params) hp[p.key] = p.fitted;
      e["params"] = hp;
      e["mape_pct_held_out"] = h.mape_pct_held_out ? nlohmann::ordered_json(*h.mape_pct_held_out) : nullptr;
      e["mape_pct_in_fit"] = h.mape_pct_in_fit ? nlohmann::ordered_json(*h.mape_pct_in_fit) : nullptr;
      if (!h.reason.empty()) e["reason"] = h.reason;
      loo.push_back(e);
    }
    j["leave_one_architecture_out"] = loo;
    os << j.dump(2) << "\n";
    return;
  }
  std::string names;
  for (const auto& a : r.architectures) names += (names.empty() ? "" : ", ") + a;
  os << "architectures: " << names << " (one shared constant set)\n";
  for (const auto& p : r.fit.params) {
    char b[160];
    std::snprintf(b, sizeof b, "  %-20s %.4g -> %.4g\n", p.key.c_str(), p.initial, p.fitted);
    os << b;
  }
  os << "MAPE before " << fmt(r.fit.before.mape_pct) << ", after " << fmt(r.fit.after.mape_pct) << "\n";
  for (const auto& [a, m] : r.mape_by_architecture) os << "  " << a << ": " << fmt(m) << "\n";
  if (r.leave_one_out.empty()) return;
  os << "leave one architecture out (each predicted with constants fitted on the others):\n";
  for (const auto& h : r.leave_one_out) {
    os << "  " << h.architecture << ": rows " << h.rows_held_out << ", held-out MAPE " << fmt(h.mape_pct_held_out)
       << ", in-fit MAPE " << fmt(h.mape_pct_in_fit);
    if (!h.params.empty()) os << ", constants " << params_text(h.params);
    if (!h.reason.empty()) os << " (" << h.reason << ")";
    os << "\n";
  }
}

}  // namespace xpusim::validation
