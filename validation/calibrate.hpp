// Calibration: fits the few efficiency constants a device YAML declares as fittable
// (`calibrate: [key, ...]`, numeric top-level fields) to that device's reference rows, by
// least squares on the log error (mean of ln(predicted/reference)^2) with Nelder-Mead in
// log space. Predictions go through predict() with Placement.overrides ("key=value"), so
// the device spec validates every trial value. Writes a date-free YAML overlay.
#pragma once
#include <nlohmann/json.hpp>

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "common/output.hpp"
#include "validation/calibration_overlay.hpp"
#include "validation/validate.hpp"

namespace xpusim::validation {

struct FitParam {
  std::string key;
  double initial = 0;
  double fitted = 0;
  // No fit row responds to it (validation/responsive_constants.hpp): not fitted, kept at
  // `initial`.
  bool no_effect = false;
};

// The device's fittable constants with their current values (after `base_overrides`).
// UserError "file:line: calibrate: ..." when the list is missing or names a non-numeric key.
std::vector<FitParam> fittable_constants(const std::string& device, const std::vector<std::string>& base_overrides = {});

// Metrics a fit uses: those the engine alone determines (no prices, no accuracy curves).
bool is_fit_metric(const std::string& metric);

struct CalibrateOptions {
  std::string device;                        // the device fitted; with `framework`: a label only
  std::string framework;                     // non-empty: fit this profile's `calibrate:` keys
                                             // (configs/frameworks/NAME.yaml) on every device
  // Non-empty: fit the kernel-model constants of these GPU architectures (configs/architectures/;
  // `calibrate:` of the first), one set shared by all of them, on every row of their devices.
  std::vector<std::string> architectures;
  // Non-empty: fit these systems' `calibrate:` fields (configs/systems/; the first's list and
  // values), one set shared by all of them, on every row whose setup is one of them.
  std::vector<std::string> systems;
  PredictFn predict;                         // empty = xpusim::predict
  std::vector<std::string> base_overrides;   // applied under the fitted keys
  // Per device, applied under everything else (leave-one-study-out: the other constant sets'
  // values while this one is fitted).
  std::map<std::string, std::vector<std::string>> device_overrides;
  int max_evaluations = 300;
  bool progress = false;
  // The objective's per-row term: false = ln(predicted/reference); true ("scaling") = that of a
  // row on N > 1 devices less that of its 1-device row (same device, system, model, batch,
  // precision, data, framework, metric and source), so a device's bias on one device does not
  // steer constants that only act between devices; rows without such a partner are left out.
  bool relative_to_one_device = false;
};

struct FitResult {
  std::string device;
  std::string framework;            // a framework fit: the profile (CalibrateOptions::framework)
  std::vector<FitParam> params;
  ValidationResult before, after;   // the device's fit rows at the initial and fitted values
  double rms_log_error_before = 0, rms_log_error_after = 0;
  int evaluations = 0;
  bool converged = false;
  bool relative_to_one_device = false;  // the objective the rms figures are in
};

// The device's rows that a fit can use, in input order: fit metrics, this device, and a framework
// profile without fitted constants of its own (a profile with a `calibrate:` list, e.g. PyTorch's
// kernel scales, is fitted relative to the device afterwards, so its rows cannot fit the device).
std::vector<ReferenceRow> fit_rows(const std::vector<ReferenceRow>& rows, const std::string& device);
// Whether a row's framework (CSV name) maps to a profile with fitted constants on the row's engine.
bool row_uses_fitted_profile(const ReferenceRow& row);
// The rows of a framework profile (its stem or a name it lists in the framework column) that a fit can use.
std::vector<ReferenceRow> framework_fit_rows(const std::vector<ReferenceRow>& rows, const std::string& framework);
// Whether a framework profile (stem or path) is kept outside configs/frameworks/ (a user's own
// stack): then no name index knows it, and a fit gives it to every one of its rows.
bool framework_outside_config_dir(const std::string& framework);
// The architecture a device YAML names ("" for none or an unreadable file).
std::string device_architecture(const std::string& device);
// The rows a fit of these architectures' constants can use: fit metrics on their devices, from
// stacks without fitted constants of their own (as fit_rows).
std::vector<ReferenceRow> architecture_fit_rows(const std::vector<ReferenceRow>& rows,
                                                const std::vector<std::string>& architectures);
// An architecture's fittable constants (`calibrate:` in configs/architectures/NAME.yaml).
std::vector<FitParam> fittable_architecture_constants(const std::string& architecture);
// The system a row runs on: its setup, or its device's default system when the setup is empty.
std::string row_system(const ReferenceRow& row);
// The rows a fit of these systems' fields can use: fit metrics on them, in input order. Every
// stack is kept: system fields are fitted last, with the devices' and profiles' constants as
// they are (a profile's fitted kernel scales do not stand in for the exchange).
std::vector<ReferenceRow> system_fit_rows(const std::vector<ReferenceRow>& rows, const std::vector<std::string>& systems);
// A system's fittable fields (`calibrate:` in configs/systems/NAME.yaml) with their values.
// FieldError naming "system" when the system is unknown or lists none.
std::vector<FitParam> fittable_system_constants(const std::string& system);
// A framework profile's fittable constants (`calibrate:` in its YAML).
std::vector<FitParam> fittable_framework_constants(const std::string& framework);

// Fits on `rows` (already filtered with fit_rows). UserError when no row can be predicted.
FitResult fit_device(const std::vector<ReferenceRow>& rows, const CalibrateOptions& o);

// What a leave-one-out holds out: each model's rows, or each study's (the CSV's `source`).
enum class HoldOut { model, study };

struct LeaveOneOut {
  std::string model;                       // the held-out model, or study with HoldOut::study
  int rows_held_out = 0;
  std::vector<FitParam> params;            // fitted without this model's rows
  std::optional<double> mape_pct_held_out; // error on this model's rows with those constants
  std::optional<double> mape_pct_in_fit;   // error on the rows that were fitted
  std::vector<double> held_out_errors_pct; // signed, one per predicted held-out row
  std::string reason;                      // why no fit was possible without this model
};

// For each model (or study) of the rows: fit without it, then predict its rows.
std::vector<LeaveOneOut> leave_one_out(const std::vector<ReferenceRow>& rows, const CalibrateOptions& o, HoldOut by);
inline std::vector<LeaveOneOut> leave_one_model_out(const std::vector<ReferenceRow>& rows, const CalibrateOptions& o) {
  return leave_one_out(rows, o, HoldOut::model);
}
// Runs `rows` with the fitted `params` (and the options' overrides).
ValidationResult run_with(const std::vector<ReferenceRow>& rows, const CalibrateOptions& o, const std::vector<FitParam>& params);
// Mean absolute error over every held-out row (each model's rows with its own fit).
std::optional<double> leave_one_out_mape(const std::vector<LeaveOneOut>& loo);

// "key=value" overrides of fitted parameters (17 significant digits: exact round trip).
std::vector<std::string> fitted_overrides(const std::vector<FitParam>& params);

// The YAML overlay: device, fitted values, before/after error and the rows used. No date,
// so the same inputs give the same bytes. `apply_hint` (the commands that apply it, in the
// caller's words: cli/ names its flags) becomes a "# Apply with ..." comment when not empty.
std::string overlay_yaml(const FitResult& fit, const std::string& reference_name, const std::string& apply_hint = "");
// The fitted values as people read them (8 significant digits), KEY=VALUE, for apply hints.
std::vector<std::string> fitted_overrides_short(const std::vector<FitParam>& params);

nlohmann::json calibration_json(const FitResult& fit, const std::vector<LeaveOneOut>* loo, HoldOut by = HoldOut::model);
void print_calibration(std::ostream& os, const FitResult& fit, const std::vector<LeaveOneOut>* loo, OutputFormat f,
                       HoldOut by = HoldOut::model);

}  // namespace xpusim::validation
