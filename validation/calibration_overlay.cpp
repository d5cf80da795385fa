#include "validation/calibration_overlay.hpp"

#include "common/output.hpp"
#include "common/spec_reader.hpp"

namespace xpusim::validation {

CalibrationOverlay load_calibration_overlay(const std::string& path) {
  YAML::Node root = load_yaml_file(path);
  SpecReader r(root, path);
  CalibrationOverlay o;
  o.device = r.text("device", std::nullopt, "device the constants were fitted for");
  YAML::Node fitted = r.child("fitted", "fitted constant -> value", true);
  if (!fitted.IsMap() || fitted.size() == 0) r.fail("fitted", "expected a mapping of constant -> value");
  SpecReader f(fitted, path, "fitted");
  std::vector<std::string> keys;
  for (const auto& kv : fitted) keys.push_back(kv.first.as<std::string>());
  for (const auto& k : keys) {
    double v = f.number(k, std::nullopt, "", "fitted value", [](double d) { return d > 0 ? "" : "must be > 0"; });
    o.overrides.push_back(k + "=" + fmt_g(v, 17));
  }
  f.finish();
  // The rest documents the fit; declared so that typos in hand-edited overlays still fail.
  r.text("reference", std::string(""), "reference CSV the fit used");
  r.text("method", std::string(""), "fitting method");
  r.text("objective", std::string(""), "fitted objective");
  r.child("initial", "values before the fit");
  for (const char* k : {"rms_log_error_before", "rms_log_error_after", "mape_pct_before", "mape_pct_after"})
    if (r.has(k) && r.node()[k].IsNull())
      r.child(k, "fit quality");
    else
      r.number(k, 0.0, "", "fit quality");
  r.integer("evaluations", 0, "", "objective evaluations");
  r.flag("converged", false, "whether Nelder-Mead converged");
  r.child("rows_used", "rows of the fit");
  r.child("rows_skipped", "rows that could not be predicted");
  r.finish();
  return o;
}

}  // namespace xpusim::validation
