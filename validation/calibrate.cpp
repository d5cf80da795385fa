#include "validation/calibrate.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include <algorithm>

#include "common/config_paths.hpp"
#include "common/error.hpp"
#include "common/output.hpp"
#include "common/records.hpp"
#include "common/progress.hpp"
#include "common/spec_reader.hpp"
#include "devices/analytical/device_spec.hpp"
#include <filesystem>

#include "engine/framework_spec.hpp"
#include "engine/platform_spec.hpp"
#include "validation/nelder_mead.hpp"
#include "validation/responsive_constants.hpp"

namespace xpusim::validation {

namespace {

std::string num17(double v) { return fmt_g(v, 17); }  // round-trips: the values a fit was scored with

std::string num8(double v) { return fmt_g(v, 8); }  // for people: the overlay and its --set line

std::string yaml_quote(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o + "\"";
}

std::vector<FitParam> with_values(std::vector<FitParam> p, const std::vector<double>& logv) {
  for (size_t i = 0; i < p.size(); ++i) p[i].fitted = std::exp(logv[i]);
  return p;
}


// Mean squared log error; infinite when any row cannot be predicted with these values
// (e.g. the device spec rejects an efficiency above 1).
double mean_sq_log_error(const ValidationResult& r) {
  double s = 0;
  int n = 0;
  for (const auto& x : r.rows) {
    if (!x.used || !x.predicted || !x.row.value || !(*x.predicted > 0)) return std::numeric_limits<double>::infinity();
    double l = std::log(*x.predicted / *x.row.value);
    s += l * l;
    ++n;
  }
  return n ? s / n : std::numeric_limits<double>::infinity();
}

// The rows a 1-device row and its N-device rows share (all but num_devices and the value).
std::string scaling_key(const ReferenceRow& r) {
  return r.device + "|" + r.setup + "|" + r.model + "|" + std::to_string(r.batch_per_device.value_or(0)) + "|" +
         r.precision + "|" + r.data + "|" + r.framework + "|" + r.metric + "|" + r.source;
}

// Mean of (ln(pred_N/ref_N) - ln(pred_1/ref_1))^2 over the rows on N > 1 devices that have a
// 1-device row; infinite when any row cannot be predicted or no row has a partner.
double mean_sq_scaling_error(const ValidationResult& r) {
  std::map<std::string, double> one;
  for (const auto& x : r.rows) {
    if (!x.used || !x.predicted || !x.row.value || !(*x.predicted > 0)) return std::numeric_limits<double>::infinity();
    if (x.row.num_devices.value_or(0) == 1) one[scaling_key(x.row)] = std::log(*x.predicted / *x.row.value);
  }
  double s = 0;
  int n = 0;
  for (const auto& x : r.rows) {
    if (x.row.num_devices.value_or(0) <= 1) continue;
    auto it = one.find(scaling_key(x.row));
    if (it == one.end()) continue;
    const double l = std::log(*x.predicted / *x.row.value) - it->second;
    s += l * l;
    ++n;
  }
  return n ? s / n : std::numeric_limits<double>::infinity();
}

double objective_of(const ValidationResult& r, bool relative) {
  return relative ? mean_sq_scaling_error(r) : mean_sq_log_error(r);
}

}  // namespace

bool is_fit_metric(const std::string& metric) {
  return metric == "train_throughput" || metric == "epoch_seconds_median_after_first" ||
         metric == "first_epoch_seconds" || metric == "time_relative_to_k80";
}

namespace {
std::vector<FitParam> calibrate_keys(const std::string& path, YAML::Node n);
std::string framework_path(const std::string& framework) {
  return find_config_file("frameworks", framework, "framework", "framework profile");
}
}  // namespace

bool framework_outside_config_dir(const std::string& framework) {
  const std::string path = framework_path(framework);
  std::error_code ec;
  const auto dir = std::filesystem::weakly_canonical(std::filesystem::path(config_dir()) / "frameworks", ec);
  return std::filesystem::weakly_canonical(path, ec).parent_path() != dir;
}

std::vector<FitParam> fittable_framework_constants(const std::string& framework) {
  const std::string path = framework_path(framework);
  return calibrate_keys(path, load_framework_yaml(path));  // a constant its base sets counts
}

std::vector<ReferenceRow> framework_fit_rows(const std::vector<ReferenceRow>& rows, const std::string& framework) {
  const std::string path = framework_path(framework);
  const FrameworkSpec f = load_framework_spec(path);
  const bool outside = framework_outside_config_dir(framework);
  std::vector<ReferenceRow> out;
  for (const auto& r : rows) {
    const bool named = r.framework == f.name || std::find(f.names.begin(), f.names.end(), r.framework) != f.names.end();
    if (!named || !is_fit_metric(r.metric)) continue;
    // A name can mean one profile per engine (Keras on GPUs and on TPUs): keep this one's.
    std::string engine;
    try {
      engine = engine_for_device(r.device);
    } catch (const UserError&) {
      continue;
    }
    if (std::find(f.engines.begin(), f.engines.end(), engine) == f.engines.end()) continue;
    // Among the profiles a name selects, the row's stack version picks one (`versions:`): fit
    // only the rows this profile predicts. A profile kept outside the configuration directory
    // (a user's own stack) is in no index: the rows naming it are its rows.
    if (!outside && std::filesystem::path(find_framework_file(r.framework, engine, r.stack_version())).stem() !=
                        std::filesystem::path(path).stem())
      continue;
    out.push_back(r);
  }
  return out;
}

std::string device_architecture(const std::string& device) {
  try {
    const YAML::Node n = load_config_yaml(device_yaml_path(device));
    return n.IsMap() && n["architecture"] && n["architecture"].IsScalar() ? n["architecture"].Scalar() : "";
  } catch (const UserError&) {
    return "";
  }
}

std::vector<ReferenceRow> architecture_fit_rows(const std::vector<ReferenceRow>& rows,
                                                const std::vector<std::string>& architectures) {
  std::vector<ReferenceRow> out;
  for (const auto& r : rows) {
    // Rows of a stack with fitted constants of its own are fitted relative to the architecture
    // afterwards (`calibrate --framework`), as with a device's rows (fit_rows).
    if (!is_fit_metric(r.metric) || row_uses_fitted_profile(r)) continue;
    const std::string a = device_architecture(r.device);
    if (std::find(architectures.begin(), architectures.end(), a) != architectures.end()) out.push_back(r);
  }
  return out;
}

std::vector<FitParam> fittable_architecture_constants(const std::string& architecture) {
  const std::string path = find_config_file("architectures", architecture, "architecture", "architecture");
  return calibrate_keys(path, load_config_yaml(path));
}

std::string row_system(const ReferenceRow& row) {
  if (!row.setup.empty()) return row.setup;
  try {
    const YAML::Node n = load_config_yaml(device_yaml_path(row.device));
    return n.IsMap() && n["default_system"] && n["default_system"].IsScalar() ? n["default_system"].Scalar() : "";
  } catch (const UserError&) {
    return "";  // unknown device: the row is skipped by validation anyway
  }
}

std::vector<ReferenceRow> system_fit_rows(const std::vector<ReferenceRow>& rows, const std::vector<std::string>& systems) {
  std::vector<ReferenceRow> out;
  for (const auto& r : rows)
    if (is_fit_metric(r.metric) && std::find(systems.begin(), systems.end(), row_system(r)) != systems.end())
      out.push_back(r);
  return out;
}

std::vector<FitParam> fittable_system_constants(const std::string& system) {
  const SystemSpec s = find_system(system, "system");  // validates the `calibrate:` list (file:line)
  if (s.calibrate.empty())
    throw FieldError("system", "'" + system + "' (" + s.file + ") lists no fittable fields: add e.g. "
                               "calibrate: [intra_host.allreduce_efficiency]");
  std::vector<FitParam> out;
  for (const auto& k : s.calibrate) {
    // The spec read every listed field; take the value it holds (positive, checked on load).
    double v = 0;
    if (k == "intra_host.bandwidth_gbps") v = s.intra_host.bandwidth_gbps;
    else if (k == "intra_host.latency_us") v = s.intra_host.latency_us;
    else if (k == "intra_host.allreduce_efficiency") v = s.intra_host.allreduce_efficiency;
    else if (k == "inter_host.bandwidth_gbps") v = s.inter_host.bandwidth_gbps;
    else if (k == "inter_host.latency_us") v = s.inter_host.latency_us;
    else if (k == "inter_host.allreduce_efficiency") v = s.inter_host.allreduce_efficiency;
    else if (k == "host.core_speed") v = s.host.core_speed;
    else if (k == "host.pcie_bandwidth_gbps") v = s.host.pcie_bandwidth_gbps;
    else if (k == "host.staging_gbps") v = s.host.staging_gbps;
    else if (k == "host.step_overhead_ms") v = s.host.step_overhead_ms;
    else throw FieldError("system", "'" + k + "' has no value in the system spec");  // system_fittable_fields grew
    out.push_back({k, v, v});
  }
  return out;
}

std::vector<FitParam> fittable_constants(const std::string& device, const std::vector<std::string>& base_overrides) {
  std::string path = device_yaml_path(device);
  YAML::Node n = analytical::load_device_yaml(path);  // constants taken from an efficiency_from device count
  if (!base_overrides.empty()) apply_overrides(n, base_overrides);
  return calibrate_keys(path, n);
}

namespace {
std::vector<FitParam> calibrate_keys(const std::string& path, YAML::Node n) {
  if (!n.IsMap() || !n["calibrate"])
    throw UserError(yaml_location(path, n) + ": calibrate: missing; list the fittable constants (numeric top-level keys), "
                    "e.g. calibrate: [compute_efficiency]");
  YAML::Node list = n["calibrate"];
  if (!list.IsSequence() || list.size() == 0)
    throw UserError(yaml_location(path, list) + ": calibrate: expected a non-empty list of numeric top-level keys");
  std::vector<FitParam> out;
  std::set<std::string> seen;
  for (const auto& k : list) {
    if (!k.IsScalar()) throw UserError(yaml_location(path, k) + ": calibrate: entries must be key names");
    std::string key = k.Scalar();
    if (!seen.insert(key).second) throw UserError(yaml_location(path, k) + ": calibrate: '" + key + "' listed twice");
    YAML::Node v = n[key];
    if (!v || !v.IsScalar())
      throw UserError(yaml_location(path, k) + ": calibrate: '" + key + "' is not a numeric top-level field of the file (or of its base)");
    char* end = nullptr;
    const std::string& s = v.Scalar();
    double d = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || *end != '\0' || !std::isfinite(d))
      throw UserError(yaml_location(path, v) + ": " + key + ": calibrate needs a number, got '" + s + "'");
    // The fit works in log space, so a fittable constant must be positive.
    if (!(d > 0)) throw UserError(yaml_location(path, v) + ": " + key + ": calibrate needs a value > 0, got " + s);
    out.push_back({key, d, d});
  }
  return out;
}
}  // namespace

ValidationResult run_with(const std::vector<ReferenceRow>& rows, const CalibrateOptions& o,
                          const std::vector<FitParam>& params) {
  ValidateOptions vo;
  vo.predict = o.predict;
  vo.overrides = o.device_overrides;
  std::vector<std::string> ov = o.base_overrides;
  for (const auto& s : fitted_overrides(params)) ov.push_back(s);
  auto add = [&](const std::string& device, const std::vector<std::string>& more) {
    std::vector<std::string>& v = vo.overrides[device];
    v.insert(v.end(), more.begin(), more.end());  // later entries win
  };
  if (!o.systems.empty()) {
    // System fields reach each row through its placement's system ("system." overrides,
    // predict/predict.cpp); every fit row runs on one of the fitted systems.
    std::vector<std::string> sov;
    for (const auto& s : ov) sov.push_back("system." + s);
    std::set<std::string> devices;
    for (const auto& r : rows) devices.insert(r.device);
    for (const auto& d : devices) add(d, sov);
  } else if (!o.architectures.empty()) {
    // The generation's constants reach each of its devices as the device keys that default to
    // them (kernel_tensor_efficiency, ...; devices/analytical/device_spec.cpp).
    std::vector<std::string> aov;
    for (const auto& s : ov) aov.push_back("kernel_" + s);
    std::set<std::string> devices;
    for (const auto& r : rows)
      if (std::find(o.architectures.begin(), o.architectures.end(), device_architecture(r.device)) != o.architectures.end())
        devices.insert(r.device);
    for (const auto& d : devices) add(d, aov);
  } else if (o.framework.empty()) {
    add(o.device, ov);
  } else {
    // Framework constants apply on every device the rows use, K80 baselines included. A
    // profile outside the configuration directory is in no name index, so it is given to
    // every row (as `validate --framework PATH` does).
    if (framework_outside_config_dir(o.framework)) vo.framework = framework_path(o.framework);
    std::vector<std::string> fov;
    for (const auto& s : ov) fov.push_back("framework." + s);
    std::set<std::string> devices = {vo.baseline_device};
    for (const auto& r : rows) devices.insert(r.device);
    for (const auto& d : devices) add(d, fov);
  }
  return validate_rows(rows, vo);
}

bool row_uses_fitted_profile(const ReferenceRow& row) {
  if (row.framework.empty()) return false;
  try {
    const std::string path = find_framework_file(row.framework, engine_for_device(row.device), row.stack_version());
    if (path.empty()) return false;
    const YAML::Node n = load_config_yaml(path);
    return n.IsMap() && n["calibrate"] && n["calibrate"].IsSequence() && n["calibrate"].size() > 0;
  } catch (const UserError&) {
    return false;  // no profile: the row is skipped by validation anyway
  }
}

std::vector<ReferenceRow> fit_rows(const std::vector<ReferenceRow>& rows, const std::string& device) {
  std::vector<ReferenceRow> out;
  for (const auto& r : rows)
    if (r.device == device && is_fit_metric(r.metric) && !row_uses_fitted_profile(r)) out.push_back(r);
  return out;
}

std::vector<std::string> fitted_overrides(const std::vector<FitParam>& params) {
  std::vector<std::string> out;
  for (const auto& p : params) out.push_back(p.key + "=" + num17(p.fitted));
  return out;
}

std::vector<std::string> fitted_overrides_short(const std::vector<FitParam>& params) {
  std::vector<std::string> out;
  for (const auto& p : params) out.push_back(p.key + "=" + num8(p.fitted));
  return out;
}

FitResult fit_device(const std::vector<ReferenceRow>& rows, const CalibrateOptions& o) {
  FitResult res;
  res.device = o.device;
  res.framework = o.framework;
  res.params = !o.systems.empty()         ? fittable_system_constants(o.systems.front())
               : !o.architectures.empty() ? fittable_architecture_constants(o.architectures.front())
               : o.framework.empty()      ? fittable_constants(o.device, o.base_overrides)
                                          : fittable_framework_constants(o.framework);
  res.relative_to_one_device = o.relative_to_one_device;
  res.before = run_with(rows, o, res.params);
  // Fit on the rows the engine can predict at the start; the rest stay listed as skipped.
  std::vector<ReferenceRow> usable;
  std::string first_reason;
  for (const auto& x : res.before.rows) {
    if (x.used && x.error_pct)
      usable.push_back(x.row);
    else if (first_reason.empty())
      first_reason = x.reason;
  }
  if (usable.empty())
    throw FieldError(!o.systems.empty() ? "system" : o.framework.empty() ? "device" : "framework",
                     "no reference row of '" + (!o.systems.empty() || o.framework.empty() ? o.device : o.framework) +
                         "' can be predicted (" +
                    std::to_string(rows.size()) + " candidate rows" +
                    (first_reason.empty() ? std::string("") : "; first reason: " + first_reason) + ")");
  if (o.relative_to_one_device) {
    std::set<std::string> one;
    for (const auto& r : usable)
      if (r.num_devices.value_or(0) == 1) one.insert(scaling_key(r));
    bool paired = false;
    for (const auto& r : usable) paired = paired || (r.num_devices.value_or(0) > 1 && one.count(scaling_key(r)));
    if (!paired)
      throw FieldError("objective", "scaling: no row of '" + o.device + "' on several devices has a 1-device row to "
                                    "scale from (same device, setup, model, batch, precision, data, framework, source)");
  }
  std::vector<double> x0;
  for (const auto& p : res.params) x0.push_back(std::log(p.initial));
  NelderMeadOptions nm;
  nm.max_evaluations = o.max_evaluations;
  auto predictions = [&](const std::vector<double>& x) {
    std::vector<double> v;
    for (const auto& r : run_with(usable, o, with_values(res.params, x)).rows)
      v.push_back(r.used && r.predicted ? *r.predicted : std::nan(""));
    return v;
  };
  ProgressBar bar("calibrate " + o.device, nm.max_evaluations, o.progress);
  auto objective = [&](const std::vector<double>& x) {
    return objective_of(run_with(usable, o, with_values(res.params, x)), o.relative_to_one_device);
  };
  NelderMeadResult best = nelder_mead(objective, x0, nm, [&](int e) { bar.update(e); });
  bar.finish();
  // A constant the rows cannot pin down goes back towards its starting value as far as the
  // rows allow (validation/responsive_constants.hpp); the fit's predictions do not change.
  const Settled settled = settle_constants(predictions, best.x, x0, nm.initial_step);
  res.params = with_values(res.params, settled.x);
  for (size_t i = 0; i < res.params.size(); ++i) {
    res.params[i].no_effect = settled.no_effect[i];
    if (settled.x[i] == x0[i]) res.params[i].fitted = res.params[i].initial;  // exactly, not exp(log(initial))
  }
  res.evaluations = best.evaluations;
  res.converged = best.converged;
  res.after = run_with(rows, o, res.params);
  ValidationResult before_usable = run_with(usable, o, with_values(res.params, x0));
  res.rms_log_error_before = std::sqrt(objective_of(before_usable, o.relative_to_one_device));
  res.rms_log_error_after = std::sqrt(best.f);
  return res;
}

std::vector<LeaveOneOut> leave_one_out(const std::vector<ReferenceRow>& rows, const CalibrateOptions& o, HoldOut by) {
  auto group = [by](const ReferenceRow& r) { return by == HoldOut::model ? r.model : r.source; };
  std::set<std::string> models;
  for (const auto& r : rows) models.insert(group(r));
  std::vector<LeaveOneOut> out;
  ProgressBar bar("leave-one-out " + o.device, static_cast<long long>(models.size()), o.progress);
  CalibrateOptions inner = o;
  inner.progress = false;
  long long done = 0;
  for (const auto& m : models) {
    std::vector<ReferenceRow> train, test;
    for (const auto& r : rows) (group(r) == m ? test : train).push_back(r);
    LeaveOneOut e;
    e.model = m;
    e.rows_held_out = static_cast<int>(test.size());
    try {
      FitResult f = fit_device(train, inner);
      e.params = f.params;
      e.mape_pct_in_fit = f.after.mape_pct;
      ValidationResult held = run_with(test, inner, f.params);
      e.mape_pct_held_out = held.mape_pct;
      for (const auto& x : held.rows)
        if (x.used && x.error_pct) e.held_out_errors_pct.push_back(*x.error_pct);
    } catch (const UserError& ex) {
      e.reason = ex.what();  // nothing left to fit without this model (or study)
    }
    out.push_back(e);
    bar.update(++done, m);
  }
  bar.finish();
  return out;
}

std::optional<double> leave_one_out_mape(const std::vector<LeaveOneOut>& loo) {
  std::vector<double> all;
  for (const auto& e : loo) all.insert(all.end(), e.held_out_errors_pct.begin(), e.held_out_errors_pct.end());
  return mape_pct(all);
}

std::string overlay_yaml(const FitResult& fit, const std::string& reference_name, const std::string& apply_hint) {
  std::ostringstream y;
  y << "# xpusim calibration overlay, written by `xpusim calibrate` (no date: same inputs, same bytes).\n";
  if (!apply_hint.empty()) y << "# Apply with " << apply_hint << ".\n";
  y << "device: " << yaml_quote(fit.device) << "\n";
  y << "reference: " << yaml_quote(reference_name) << "\n";
  y << "method: nelder_mead_log_space\n";
  y << "objective: \"" << (fit.relative_to_one_device
                                ? "mean of (ln(predicted / reference) - that of the row's 1-device row)^2 over rows_used"
                                : "mean of ln(predicted / reference)^2 over rows_used")
    << "\"\n";
  y << "fitted:\n";
  for (const auto& p : fit.params)
    y << "  " << p.key << ": " << num8(p.fitted) << (p.no_effect ? "  # kept: no row responds to it" : "") << "\n";
  y << "initial:\n";
  for (const auto& p : fit.params) y << "  " << p.key << ": " << num8(p.initial) << "\n";
  y << "rms_log_error_before: " << num8(fit.rms_log_error_before) << "\n";
  y << "rms_log_error_after: " << num8(fit.rms_log_error_after) << "\n";
  y << "mape_pct_before: " << (fit.before.mape_pct ? num8(*fit.before.mape_pct) : "null") << "\n";
  y << "mape_pct_after: " << (fit.after.mape_pct ? num8(*fit.after.mape_pct) : "null") << "\n";
  y << "evaluations: " << fit.evaluations << "\n";
  y << "converged: " << (fit.converged ? "true" : "false") << "\n";
  y << "rows_used:\n";
  for (const auto& x : fit.after.rows) {
    if (!x.used) continue;
    const ReferenceRow& r = x.row;
    y << "  - " << yaml_quote("line " + std::to_string(r.line) + ": " + r.model + " x" +
                              std::to_string(r.num_devices.value_or(0)) + " batch " +
                              std::to_string(r.batch_per_device.value_or(0)) + " " + r.precision + " " + r.data + " " +
                              r.metric + " = " + num8(r.value.value_or(0)))
      << "\n";
  }
  y << "rows_skipped:\n";
  for (const auto& x : fit.after.rows)
    if (!x.used) y << "  - " << yaml_quote("line " + std::to_string(x.row.line) + ": " + x.reason) << "\n";
  return y.str();
}

nlohmann::json calibration_json(const FitResult& fit, const std::vector<LeaveOneOut>* loo, HoldOut by) {
  nlohmann::json j;
  j["device"] = fit.device;
  // Keyed by constant (not a list), so the one CSV row has params.<key>.initial/.fitted columns.
  nlohmann::json params = nlohmann::json::object();
  for (const auto& p : fit.params)
    params[p.key] = {{"initial", p.initial}, {"fitted", p.fitted}, {"no_effect", p.no_effect}};
  j["params"] = params;
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  j["rows_used"] = fit.after.rows_used;
  j["rows_skipped"] = fit.after.rows_skipped;
  j["rms_log_error_before"] = fit.rms_log_error_before;
  j["rms_log_error_after"] = fit.rms_log_error_after;
  j["mape_pct_before"] = opt(fit.before.mape_pct);
  j["mape_pct_after"] = opt(fit.after.mape_pct);
  j["evaluations"] = fit.evaluations;
  j["converged"] = fit.converged;
  j["rows"] = validation_json(fit.after)["rows"];
  if (loo) {
    nlohmann::json l = nlohmann::json::array();
    for (const auto& e : *loo) {
      nlohmann::json x;
      x[by == HoldOut::model ? "model" : "study"] = e.model;
      x["rows_held_out"] = e.rows_held_out;
      x["mape_pct_held_out"] = opt(e.mape_pct_held_out);
      x["mape_pct_in_fit"] = opt(e.mape_pct_in_fit);
      nlohmann::json p = nlohmann::json::object();
      for (const auto& q : e.params) p[q.key] = q.fitted;
      x["params"] = p;
      if (!e.reason.empty()) x["reason"] = e.reason;
      l.push_back(x);
    }
    j["leave_one_out"] = {{by == HoldOut::model ? "by_model" : "by_study", l}, {"mape_pct", opt(leave_one_out_mape(*loo))}};
  }
  return j;
}

void print_calibration(std::ostream& os, const FitResult& fit, const std::vector<LeaveOneOut>* loo, OutputFormat f,
                       HoldOut by) {
  if (f == OutputFormat::json) {
    print_json_document(os, calibration_json(fit, loo, by));
    return;
  }
  if (f == OutputFormat::csv) {  // one row: the fit (per-row results and leave-one-out are in the JSON)
    print_csv_records(os, nlohmann::json::array({calibration_json(fit, loo, by)}), {"device"});
    return;
  }
  auto opt = [](const std::optional<double>& v, int d) { return v ? fmt_fixed(*v, d) : std::string("n/a"); };
  Table p({"constant", "initial", "fitted"});
  for (const auto& q : fit.params)
    p.add({q.key, fmt_sig(q.initial, 6), fmt_sig(q.fitted, 6) + (q.no_effect ? " (kept: no row responds)" : "")});
  os << "Calibration of " << fit.device << " (Nelder-Mead on ln(predicted/reference)"
     << (fit.relative_to_one_device ? " less its 1-device row's (scaling)" : "") << ", " << fit.evaluations
     << " evaluations" << (fit.converged ? ", converged" : ", stopped at the evaluation limit") << ")\n";
  p.print(os, f);
  os << "\n";
  Table s({"fit", "before", "after"});
  s.add({"rms_log_error", fmt_sig(fit.rms_log_error_before, 4), fmt_sig(fit.rms_log_error_after, 4)});
  s.add({"mape_pct", opt(fit.before.mape_pct, 2), opt(fit.after.mape_pct, 2)});
  s.add({"rows_used", std::to_string(fit.before.rows_used), std::to_string(fit.after.rows_used)});
  s.print(os, f);
  if (fit.after.rows_skipped) {
    os << "\nSkipped rows\n";
    Table k({"line", "model", "metric", "reason"});
    for (const auto& x : fit.after.rows)
      if (!x.used) k.add({std::to_string(x.row.line), x.row.model, x.row.metric, x.reason});
    k.print(os, f);
  }
  if (loo) {
    const std::string what = by == HoldOut::model ? "model" : "study";
    os << "\nLeave one " << what << " out (fit without the " << what << ", error on its rows)\n";
    std::vector<std::string> cols = {what, "rows", "mape_pct_held_out", "mape_pct_in_fit"};
    for (const auto& q : fit.params) cols.push_back(q.key);
    Table t(cols);
    for (const auto& e : *loo) {
      std::vector<std::string> row = {e.model, std::to_string(e.rows_held_out), opt(e.mape_pct_held_out, 2),
                                      opt(e.mape_pct_in_fit, 2)};
      for (size_t i = 0; i < fit.params.size(); ++i)
        row.push_back(i < e.params.size() ? fmt_sig(e.params[i].fitted, 5) : (e.reason.empty() ? "" : "n/a"));
      t.add(row);
    }
    t.print(os, f);
    os << "leave-one-out mape_pct (all held-out rows): " << opt(leave_one_out_mape(*loo), 2) << "\n";
  }
}

}  // namespace xpusim::validation
