// `xpusim calibrate`: fit a device's declared efficiency constants (`calibrate:` in its YAML)
// to its rows of a reference CSV, write the YAML overlay, and optionally report the error
// on each model (or study) when it was left out of the fit; or, with --leave-one-out study
// alone, redo every fit without each study.
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "common/checked_io.hpp"
#include "common/error.hpp"
#include "validation/arch_fit.hpp"
#include "validation/calibrate.hpp"
#include "validation/graph_cache.hpp"
#include "validation/leave_study_out.hpp"

namespace xpusim::cli {

namespace {
struct CalibrateArgs {
  std::string reference, device, framework, architecture, leave_one_out, out, format;
  std::vector<std::string> overrides;
  int max_evaluations = 300;
};

// How to apply a written overlay, in command-line words (the library writes it as a comment).
std::string apply_hint(const validation::FitResult& fit) {
  std::string h = "`xpusim validate --calibration FILE` or `xpusim predict --device " + fit.device;
  for (const auto& kv : validation::fitted_overrides_short(fit.params)) h += " --set " + kv;
  return h + "`";
}
}  // namespace

void register_calibrate(CLI::App& app) {
  auto a = std::make_shared<CalibrateArgs>();
  auto* cmd = app.add_subcommand("calibrate", "fit a device's efficiency constants to reference rows (least squares on log error)");
  cmd->add_option("--reference", a->reference, "reference CSV")->required();
  cmd->add_option("--device", a->device, "device whose `calibrate:` constants are fitted");
  cmd->add_option("--framework", a->framework,
                  "instead: a framework profile (configs/frameworks/) whose `calibrate:` constants are fitted on its rows");
  cmd->add_option("--architecture", a->architecture,
                  "instead: GPU architectures (configs/architectures/, comma-separated) whose kernel-model constants "
                  "are fitted, one set shared, on every row of their devices");
  cmd->add_option("--leave-one-out", a->leave_one_out,
                  "model|study|architecture: refit without each model (or study, the CSV's source) and report its error; "
                  "study without --device/--framework redoes every fit without each study; architecture: each "
                  "kernel-model generation predicted with constants fitted on the others' rows");
  cmd->add_option("--out", a->out, "write the fitted values as a YAML overlay (xpusim validate --calibration)");
  cmd->add_option("--set", a->overrides, "override a device YAML field before fitting, KEY=VALUE (repeatable)");
  cmd->add_option("--max-evaluations", a->max_evaluations, "objective evaluations per fit")->capture_default_str()->check(int_in(1, 1000000));
  add_format_option(*cmd, a->format, "table|json|csv", "table");
  cmd->callback([a] {
    using namespace validation;
    OutputFormat f = parse_output_format(a->format, {OutputFormat::table, OutputFormat::json, OutputFormat::csv});
    if (!a->leave_one_out.empty() && a->leave_one_out != "model" && a->leave_one_out != "study" &&
        a->leave_one_out != "architecture")
      throw UserError("--leave-one-out: '" + a->leave_one_out + "' is not one of model, study, architecture");
    if (a->leave_one_out == "architecture" || !a->architecture.empty()) {
      if (!a->device.empty() || !a->framework.empty())
        throw UserError("--architecture: give it (or --leave-one-out architecture) without --device or --framework");
      if (!a->out.empty()) throw UserError("--out: an architecture fit prints its constants; write them in the YAML");
      std::vector<std::string> archs;
      std::string list = a->architecture;
      for (size_t p = 0; !list.empty() && p != std::string::npos;) {
        size_t q = list.find(',', p);
        archs.push_back(list.substr(p, q == std::string::npos ? q : q - p));
        p = q == std::string::npos ? q : q + 1;
      }
      std::vector<ReferenceRow> all = read_reference_csv(a->reference);
      print_architecture_fit(std::cout, fit_architectures(all, archs, a->leave_one_out == "architecture", a->max_evaluations,
                                                          a->overrides), f);
      return;
    }
    const HoldOut by = a->leave_one_out == "study" ? HoldOut::study : HoldOut::model;
    if (a->max_evaluations < 1) throw UserError("--max-evaluations: must be >= 1");
    if (by == HoldOut::study && a->device.empty() && a->framework.empty()) {
      // Every fitted constant set, redone without each study (validation/leave_study_out.hpp).
      if (!a->out.empty()) throw UserError("--out: a leave-one-study-out run writes no overlay");
      if (!a->overrides.empty()) throw UserError("--set: give --device to override a device's fields");
      std::vector<ReferenceRow> all = read_reference_csv(a->reference);
      StudyHoldOutOptions so;
      so.predict = graph_caching_predictor();
      so.max_evaluations = a->max_evaluations;
      so.progress = true;
      print_leave_one_study_out(std::cout, leave_one_study_out(all, so), f);
      return;
    }
    if (a->device.empty() == a->framework.empty())
      throw UserError("--device or --framework: give exactly one (or neither, with --leave-one-out study)");
    std::vector<ReferenceRow> all = read_reference_csv(a->reference);
    std::vector<ReferenceRow> rows = a->framework.empty() ? fit_rows(all, a->device) : framework_fit_rows(all, a->framework);
    if (rows.empty())
      throw UserError((a->framework.empty() ? "--device: no row of '" + a->device : "--framework: no row of '" + a->framework) +
                      "' in " + a->reference +
                      " has a fit metric (train_throughput, epoch_seconds_median_after_first, first_epoch_seconds, "
                      "time_relative_to_k80)");
    CalibrateOptions o;
    o.device = a->framework.empty() ? a->device : "framework " + a->framework;
    o.framework = a->framework;
    o.base_overrides = a->overrides;
    o.max_evaluations = a->max_evaluations;
    o.progress = true;
    o.predict = graph_caching_predictor();  // a fit predicts each row hundreds of times
    FitResult fit = fit_device(rows, o);
    std::vector<LeaveOneOut> loo;
    if (!a->leave_one_out.empty()) loo = leave_one_out(rows, o, by);
    if (!a->out.empty()) {
      write_file_checked(a->out, [&](std::ostream& os) { os << overlay_yaml(fit, a->reference, apply_hint(fit)); }, "--out");
    }
    print_calibration(std::cout, fit, a->leave_one_out.empty() ? nullptr : &loo, f, by);
  });
}

}  // namespace xpusim::cli
