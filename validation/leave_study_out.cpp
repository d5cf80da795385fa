#include "validation/leave_study_out.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "common/config_paths.hpp"
#include "common/error.hpp"
#include "common/progress.hpp"
#include "devices/analytical/device_spec.hpp"
#include "engine/framework_spec.hpp"
#include "predict/predict.hpp"
#include "validation/framework_overlay.hpp"

namespace xpusim::validation {

namespace fs = std::filesystem;

namespace {

// A device YAML of the analytical engine as far as the calibration pipeline needs it.
struct DeviceNode {
  std::string name, parent;        // parent: its efficiency_from device ("" = none)
  std::set<std::string> own_keys;  // top-level keys its own file sets
  bool fitted = false;             // a `calibrate:` list and rows of its own
};

std::vector<std::string> yaml_files(const std::string& kind) {
  std::vector<std::string> out;
  std::error_code ec;
  const fs::path dir = fs::path(config_dir()) / kind;
  if (fs::is_directory(dir, ec))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".yaml") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

bool has_calibrate_list(const YAML::Node& n) {
  return n.IsMap() && n["calibrate"] && n["calibrate"].IsSequence() && n["calibrate"].size() > 0;
}

std::map<std::string, DeviceNode> analytical_devices() {
  std::map<std::string, DeviceNode> out;
  for (const auto& f : yaml_files("devices")) {
    const YAML::Node n = load_config_yaml(f);
    if (!n.IsMap() || !n["engine"] || !n["engine"].IsScalar() || n["engine"].Scalar() != "analytical") continue;
    DeviceNode d;
    d.name = fs::path(f).stem().string();
    if (n["efficiency_from"] && n["efficiency_from"].IsScalar())
      d.parent = fs::path(n["efficiency_from"].Scalar()).stem().string();
    for (const auto& kv : n) d.own_keys.insert(kv.first.Scalar());
    d.fitted = has_calibrate_list(n);
    out[d.name] = d;
  }
  return out;
}

std::vector<std::string> ancestors(const std::map<std::string, DeviceNode>& devs, const std::string& name) {
  std::vector<std::string> out;
  std::string p = devs.count(name) ? devs.at(name).parent : "";
  while (!p.empty() && devs.count(p) && std::find(out.begin(), out.end(), p) == out.end()) {
    out.push_back(p);
    p = devs.at(p).parent;
  }
  return out;
}

// A framework profile's `base:` stem ("" = none).
std::string base_of(const std::string& profile_path) {
  const YAML::Node n = load_config_yaml(profile_path);
  return n.IsMap() && n["base"] && n["base"].IsScalar() ? n["base"].Scalar() : "";
}

// KEY -> declared default of a spec's fields.
std::map<std::string, double> numeric_defaults(const std::vector<FieldDoc>& fields) {
  std::map<std::string, double> out;
  for (const auto& f : fields) {
    char* end = nullptr;
    const double v = std::strtod(f.default_value.c_str(), &end);
    if (end != f.default_value.c_str() && *end == '\0' && std::isfinite(v)) out[f.key] = v;
  }
  return out;
}


std::string framework_of_row(const ReferenceRow& r) {
  if (r.framework.empty()) return "";
  try {
    return find_framework_file(r.framework, engine_for_device(r.device), r.stack_version());
  } catch (const UserError&) {
    return "";
  }
}

bool relative_to_baseline(const ReferenceRow& r) { return r.metric.find("_relative_to_") != std::string::npos; }

class Round {
 public:
  Round(const std::vector<ReferenceRow>& all, const std::string& study, const StudyHoldOutOptions& o,
        const std::map<std::string, DeviceNode>& devs)
      : all_(all), study_(study), o_(o), devs_(devs) {
    for (const auto& r : all_) (r.source == study_ ? test_ : train_).push_back(r);
  }

  // Device overrides of this round for every device: its own set's values, then the values of
  // changed ancestors for the keys no device below them sets.
  std::vector<std::string> device_overrides(const std::string& name) const {
    std::map<std::string, std::string> taken;
    std::set<std::string> shadowed;
    std::string node = name;
    std::vector<std::string> chain = {name};
    for (const auto& a : ancestors(devs_, name)) chain.push_back(a);
    for (const auto& n : chain) {
      auto it = values_.find(n);
      if (it != values_.end())
        for (const auto& [k, v] : it->second)
          if (!taken.count(k) && (n == name || !shadowed.count(k))) taken[k] = v;
      if (devs_.count(n)) shadowed.insert(devs_.at(n).own_keys.begin(), devs_.at(n).own_keys.end());
    }
    std::vector<std::string> out;
    for (const auto& [k, v] : taken) out.push_back(k + "=" + v);
    return out;
  }

  std::map<std::string, std::vector<std::string>> all_device_overrides() const {
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& [name, d] : devs_) {
      std::vector<std::string> v = device_overrides(name);
      if (!v.empty()) out[name] = v;
    }
    return out;
  }

  // Whether rows depend on a device whose constants changed in this round.
  bool depends_on_change(const std::vector<ReferenceRow>& rows) const {
    for (const auto& r : rows) {
      std::vector<std::string> used = {r.device};
      if (relative_to_baseline(r)) used.push_back(ValidateOptions().baseline_device);
      for (const auto& u : std::vector<std::string>(used))
        for (const auto& a : ancestors(devs_, u)) used.push_back(a);
      for (const auto& u : used)
        if (changed_.count(u)) return true;
    }
    return false;
  }

  bool has_study_rows(const std::vector<ReferenceRow>& rows) const {
    return std::any_of(rows.begin(), rows.end(), [&](const ReferenceRow& r) { return r.source == study_; });
  }

  CalibrateOptions options() const {
    CalibrateOptions c;
    c.predict = o_.predict;
    c.max_evaluations = o_.max_evaluations;
    c.device_overrides = all_device_overrides();
    return c;
  }

  ConstantSetRound device_set(const std::string& name) {
    ConstantSetRound s = refit_set(
        "device " + name, fit_rows(all_, name), fit_rows(train_, name), fittable_constants(name),
        [&](CalibrateOptions& c) {
          c.device = name;
          c.base_overrides = device_overrides(name);  // changed ancestors' values, under the fitted keys
          c.device_overrides.erase(name);
        },
        [&] { return numeric_defaults(analytical::device_spec_fields(name)); });
    if (s.action == "unchanged") return s;
    for (const auto& p : s.params) values_[name][p.key] = fmt_g(p.fitted, 17);
    changed_.insert(name);
    return s;
  }

  ConstantSetRound framework_set(const std::string& path) {
    const std::string stem = fs::path(path).stem().string();
    // The base's values of this round, for the keys this profile does not set (its own are
    // not fitted yet in this round; validation/framework_overlay.hpp).
    const std::vector<std::string> from_base = profile_overrides(path, framework_values_);
    ConstantSetRound s = refit_set(
        "framework " + stem, framework_fit_rows(all_, stem), framework_fit_rows(train_, stem),
        fittable_framework_constants(stem),
        [&](CalibrateOptions& c) {
          c.device = "framework " + stem;
          c.framework = stem;
          c.base_overrides = from_base;  // under the fitted keys: a key the profile fits wins
        },
        [&] { return numeric_defaults(framework_spec_fields(path)); }, !from_base.empty());
    if (s.action == "unchanged") return s;
    for (const auto& p : s.params) framework_values_[stem].push_back(p.key + "=" + fmt_g(p.fitted, 17));
    return s;
  }

  // The held-out rows, each with the device values of this round and its own profile's.
  ValidationResult predict_held_out(bool today) const {
    std::map<std::string, std::vector<ReferenceRow>> by_profile;
    std::vector<std::string> order;
    for (const auto& r : test_) {
      if (!is_fit_metric(r.metric)) continue;
      const std::string p = framework_of_row(r);
      if (!by_profile.count(p)) order.push_back(p);
      by_profile[p].push_back(r);
    }
    ValidationResult all;
    for (const auto& p : order) {
      ValidateOptions vo;
      vo.predict = o_.predict;
      if (!today) {
        vo.overrides = all_device_overrides();
        // The base's values of this round first, then the profile's own (later entries win).
        std::vector<std::string> fov;
        for (const auto& kv : profile_overrides(p, framework_values_)) fov.push_back("framework." + kv);
        if (!fov.empty()) {
          std::set<std::string> devices = {vo.baseline_device};
          for (const auto& r : by_profile[p]) devices.insert(r.device);
          for (const auto& d : devices) vo.overrides[d].insert(vo.overrides[d].end(), fov.begin(), fov.end());
        }
      }
      ValidationResult v = validate_rows(by_profile[p], vo);
      all.rows.insert(all.rows.end(), v.rows.begin(), v.rows.end());
    }
    std::sort(all.rows.begin(), all.rows.end(), [](const RowResult& a, const RowResult& b) { return a.row.line < b.row.line; });
    summarize(all);
    return all;
  }

 private:
  // One constant set in this round: unchanged when neither its rows, a device they depend on
  // nor a set it takes values from (`upstream_changed`: a profile's base) changed; else
  // refitted on `rows` (the other studies'), or its declared defaults without any.
  ConstantSetRound refit_set(const std::string& label, const std::vector<ReferenceRow>& full,
                             const std::vector<ReferenceRow>& rows, std::vector<FitParam> today,
                             const std::function<void(CalibrateOptions&)>& configure,
                             const std::function<std::map<std::string, double>()>& defaults,
                             bool upstream_changed = false) const {
    ConstantSetRound s;
    s.set = label;
    for (auto& p : today) p.fitted = p.initial;
    s.params = today;
    if (!has_study_rows(full) && !depends_on_change(full) && !upstream_changed) {
      s.action = "unchanged";
      return s;
    }
    try {
      if (rows.empty()) throw UserError("its rows are all in this study");
      CalibrateOptions c = options();
      configure(c);
      FitResult f = fit_device(rows, c);
      s.action = "refit";
      s.rows = f.after.rows_used;
      s.params = f.params;
    } catch (const UserError& e) {
      unfitted(s, defaults(), e.what());
    }
    for (size_t i = 0; i < s.params.size(); ++i) s.params[i].initial = today[i].initial;
    return s;
  }

  static void unfitted(ConstantSetRound& s, const std::map<std::string, double>& defaults, const std::string& why) {
    s.action = "unfitted";
    s.rows = 0;
    s.reason = why;
    for (auto& p : s.params) {
      auto it = defaults.find(p.key);
      if (it == defaults.end())
        throw InternalError("leave-one-study-out: no declared default for fitted constant '" + p.key + "'");
      p.fitted = it->second;
    }
  }

  const std::vector<ReferenceRow>& all_;
  const std::string study_;
  const StudyHoldOutOptions& o_;
  const std::map<std::string, DeviceNode>& devs_;
  std::vector<ReferenceRow> train_, test_;
  std::map<std::string, std::map<std::string, std::string>> values_;  // device -> key -> value this round
  std::set<std::string> changed_;                                     // devices refitted or unfitted
  std::map<std::string, std::vector<std::string>> framework_values_;  // profile stem -> KEY=VALUE this round
};

}  // namespace

std::vector<StudyHoldOut> leave_one_study_out(const std::vector<ReferenceRow>& rows, const StudyHoldOutOptions& o) {
  // The pipeline: fitted devices, parents first, then profiles with fitted constants.
  std::map<std::string, DeviceNode> devs = analytical_devices();
  std::vector<std::string> device_sets;
  for (auto& [name, d] : devs) {
    if (!d.fitted) continue;
    d.fitted = !fit_rows(rows, name).empty();
    if (d.fitted) device_sets.push_back(name);
  }
  std::stable_sort(device_sets.begin(), device_sets.end(), [&](const std::string& a, const std::string& b) {
    return ancestors(devs, a).size() < ancestors(devs, b).size();
  });
  std::vector<std::string> framework_sets;
  for (const auto& f : yaml_files("frameworks"))
    if (has_calibrate_list(load_config_yaml(f)) && !framework_fit_rows(rows, fs::path(f).stem().string()).empty())
      framework_sets.push_back(f);
  // Bases before the profiles that take their values (a base has no base of its own).
  std::stable_sort(framework_sets.begin(), framework_sets.end(), [](const std::string& a, const std::string& b) {
    return base_of(a).empty() && !base_of(b).empty();
  });

  std::vector<std::string> studies;
  for (const auto& r : rows)
    if (is_fit_metric(r.metric) && std::find(studies.begin(), studies.end(), r.source) == studies.end())
      studies.push_back(r.source);
  std::sort(studies.begin(), studies.end());

  std::vector<StudyHoldOut> out;
  ProgressBar bar("leave-one-study-out", static_cast<long long>(studies.size()), o.progress);
  long long done = 0;
  for (const auto& study : studies) {
    Round round(rows, study, o, devs);
    StudyHoldOut h;
    h.study = study;
    for (const auto& d : device_sets) h.sets.push_back(round.device_set(d));
    for (const auto& f : framework_sets) h.sets.push_back(round.framework_set(f));
    const ValidationResult held = round.predict_held_out(false);
    const ValidationResult today = round.predict_held_out(true);
    h.rows = static_cast<int>(held.rows.size());
    h.rows_predicted = held.rows_used;
    h.mape_pct_held_out = held.mape_pct;
    h.mape_pct_in_sample = today.mape_pct;
    h.by_metric_held_out = held.by_metric;
    for (const auto& x : held.rows)
      if (x.used && x.error_pct) h.held_out_errors_pct.push_back(*x.error_pct);
    out.push_back(h);
    bar.update(++done, study.substr(0, 30));
  }
  bar.finish();
  return out;
}

std::optional<double> leave_one_study_out_mape(const std::vector<StudyHoldOut>& r) {
  std::vector<double> all;
  for (const auto& h : r) all.insert(all.end(), h.held_out_errors_pct.begin(), h.held_out_errors_pct.end());
  return mape_pct(all);
}

}  // namespace xpusim::validation
