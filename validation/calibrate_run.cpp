// One calibration run (calibrate_run.hpp): the dispatch `xpusim calibrate` had in its callback.
#include "validation/calibrate_run.hpp"

#include "common/checked_io.hpp"
#include "common/error.hpp"
#include "validation/arch_fit.hpp"
#include "validation/graph_cache.hpp"
#include "validation/leave_study_out.hpp"
#include "validation/reference_csv.hpp"

namespace xpusim::validation {

namespace {
// A fit of system fields (`calibrate:` in configs/systems/): one set shared by the systems
// named, on every row that runs on one of them; printed like a device's fit.
void run_system_calibration(const CalibrateRequest& a, HoldOut by, std::ostream& os, OutputFormat f) {
  if (!a.device.empty() || !a.framework.empty())
    throw FieldError("system", "give it without device or framework (one set of fields is fitted at a time)");
  if (!a.out.empty())
    throw FieldError("out", "a system fit prints its fields; write them in the system YAML (configs/systems/)");
  if (!a.overrides.empty()) throw FieldError("set", "give a device to override a device's fields");
  // One shared set: every system must list the same fields (the first's values start the fit).
  const std::vector<FitParam> first = fittable_system_constants(a.systems.front());
  for (size_t i = 1; i < a.systems.size(); ++i) {
    const std::vector<FitParam> other = fittable_system_constants(a.systems[i]);
    bool same = other.size() == first.size();
    for (size_t k = 0; same && k < first.size(); ++k) same = other[k].key == first[k].key;
    if (!same)
      throw FieldError("system", "'" + a.systems[i] + "' lists other fittable fields than '" + a.systems.front() +
                                     "': systems fitted together must list the same `calibrate:` fields");
  }
  std::vector<ReferenceRow> all = read_reference_csv(a.reference);
  std::vector<ReferenceRow> rows = system_fit_rows(all, a.systems);
  std::string names;
  for (const auto& s : a.systems) names += (names.empty() ? "" : ",") + s;
  if (rows.empty())
    throw FieldError("system", "no row on '" + names + "' in " + a.reference +
                                   " has a fit metric (train_throughput, epoch_seconds_median_after_first, "
                                   "first_epoch_seconds, time_relative_to_k80)");
  CalibrateOptions o;
  o.device = "system " + names;
  o.systems = a.systems;
  o.relative_to_one_device = a.objective == "scaling";
  o.max_evaluations = a.max_evaluations;
  o.progress = a.progress;
  o.predict = graph_caching_predictor();
  FitResult fit = fit_device(rows, o);
  std::vector<LeaveOneOut> loo;
  if (!a.leave_one_out.empty()) loo = leave_one_out(rows, o, by);
  print_calibration(os, fit, a.leave_one_out.empty() ? nullptr : &loo, f, by);
}
}  // namespace

void run_calibration(const CalibrateRequest& a, std::ostream& os, OutputFormat f) {
  if (a.reference.empty()) throw FieldError("reference", "a reference CSV is required");
  if (!a.leave_one_out.empty() && a.leave_one_out != "model" && a.leave_one_out != "study" &&
      a.leave_one_out != "architecture")
    throw FieldError("leave_one_out", "'" + a.leave_one_out + "' is not one of model, study, architecture");
  if (a.max_evaluations < 1) throw FieldError("max_evaluations", "must be >= 1");
  if (!a.objective.empty() && a.objective != "log_error" && a.objective != "scaling")
    throw FieldError("objective", "'" + a.objective + "' is not one of log_error, scaling");
  if (a.objective == "scaling" && (a.leave_one_out == "architecture" || !a.architectures.empty() ||
                                   (a.device.empty() && a.framework.empty() && a.systems.empty())))
    throw FieldError("objective", "scaling applies to a device, framework or system fit");
  if (a.leave_one_out == "architecture" || !a.architectures.empty()) {
    if (!a.systems.empty()) throw FieldError("system", "give it without architecture (one set of fields is fitted at a time)");
    if (!a.device.empty() || !a.framework.empty())
      throw FieldError("architecture", "give it (or leave_one_out architecture) without device or framework");
    if (!a.out.empty()) throw FieldError("out", "an architecture fit prints its constants; write them in the YAML");
    std::vector<ReferenceRow> all = read_reference_csv(a.reference);
    print_architecture_fit(os, fit_architectures(all, a.architectures, a.leave_one_out == "architecture",
                                                 a.max_evaluations, a.overrides), f);
    return;
  }
  const HoldOut by = a.leave_one_out == "study" ? HoldOut::study : HoldOut::model;
  if (!a.systems.empty()) {
    run_system_calibration(a, by, os, f);
    return;
  }
  if (by == HoldOut::study && a.device.empty() && a.framework.empty()) {
    // Every fitted constant set, redone without each study (validation/leave_study_out.hpp).
    if (!a.out.empty()) throw FieldError("out", "a leave-one-study-out run writes no overlay");
    if (!a.overrides.empty()) throw FieldError("set", "give a device to override a device's fields");
    std::vector<ReferenceRow> all = read_reference_csv(a.reference);
    StudyHoldOutOptions so;
    so.predict = graph_caching_predictor();
    so.max_evaluations = a.max_evaluations;
    so.progress = a.progress;
    print_leave_one_study_out(os, leave_one_study_out(all, so), f);
    return;
  }
  if (a.device.empty() == a.framework.empty())
    throw FieldError("device", "give exactly one of device or framework (or neither, with leave_one_out study)");
  std::vector<ReferenceRow> all = read_reference_csv(a.reference);
  std::vector<ReferenceRow> rows = a.framework.empty() ? fit_rows(all, a.device) : framework_fit_rows(all, a.framework);
  if (rows.empty())
    throw FieldError(a.framework.empty() ? "device" : "framework",
                     "no row of '" + (a.framework.empty() ? a.device : a.framework) + "' in " + a.reference +
                         " has a fit metric (train_throughput, epoch_seconds_median_after_first, first_epoch_seconds, "
                         "time_relative_to_k80)");
  CalibrateOptions o;
  o.device = a.framework.empty() ? a.device : "framework " + a.framework;
  o.framework = a.framework;
  o.relative_to_one_device = a.objective == "scaling";
  o.base_overrides = a.overrides;
  o.max_evaluations = a.max_evaluations;
  o.progress = a.progress;
  o.predict = graph_caching_predictor();  // a fit predicts each row hundreds of times
  FitResult fit = fit_device(rows, o);
  std::vector<LeaveOneOut> loo;
  if (!a.leave_one_out.empty()) loo = leave_one_out(rows, o, by);
  if (!a.out.empty()) {
    const std::string hint = a.apply_hint ? a.apply_hint(fit) : std::string();
    try {
      write_file_checked(a.out, [&](std::ostream& s) { s << overlay_yaml(fit, a.reference, hint); });
    } catch (const UserError& e) {
      throw FieldError("out", e.what());  // "PATH: cannot write file: ..." under the out field
    }
  }
  print_calibration(os, fit, a.leave_one_out.empty() ? nullptr : &loo, f, by);
}

}  // namespace xpusim::validation
