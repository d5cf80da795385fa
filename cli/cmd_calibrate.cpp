// `xpusim calibrate`: fit a device's declared efficiency constants (`calibrate:` in its YAML)
// to its rows of a reference CSV, write the YAML overlay, and optionally report the error
// on each model (or study) when it was left out of the fit; or, with --leave-one-out study
// alone, redo every fit without each study; or fit GPU architectures' or systems' fields. The run itself is validation/calibrate_run.hpp
// (shared with Python's xpusim.calibrate); this file holds the flags.
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "common/error.hpp"
#include "validation/calibrate.hpp"
#include "validation/calibrate_run.hpp"

namespace xpusim::cli {

namespace {
struct CalibrateArgs {
  std::string reference, device, framework, architecture, system, objective, leave_one_out, out, format;
  std::vector<std::string> overrides;
  int max_evaluations = 300;
};

// How to apply a written overlay, in command-line words (the library writes it as a comment).
std::string apply_hint(const validation::FitResult& fit) {
  // A framework fit's constants are the profile's (framework.KEY).
  const std::string& profile = fit.framework;
  std::string h = "`xpusim validate --calibration FILE` or `xpusim predict " +
                  (profile.empty() ? "--device " + fit.device : "--device DEVICE --framework " + profile);
  for (const auto& kv : validation::fitted_overrides_short(fit.params))
    h += std::string(" --set ") + (profile.empty() ? "" : "framework.") + kv;
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
  cmd->add_option("--system", a->system,
                  "instead: systems (configs/systems/, comma-separated) whose `calibrate:` fields (dotted, e.g. "
                  "intra_host.allreduce_efficiency) are fitted, one set shared, on every row that runs on them");
  cmd->add_option("--objective", a->objective,
                  "log_error (default): ln(predicted/reference) per row; scaling: each multi-device row's log error "
                  "less its 1-device row's (for constants that act only between devices)");
  cmd->add_option("--leave-one-out", a->leave_one_out,
                  "model|study|architecture: refit without each model (or study, the CSV's source) and report its error; "
                  "study without --device/--framework redoes every fit without each study; architecture: each "
                  "kernel-model generation predicted with constants fitted on the others' rows");
  cmd->add_option("--out", a->out, "write the fitted values as a YAML overlay (xpusim validate --calibration)");
  cmd->add_option("--set", a->overrides, "override a device YAML field before fitting, KEY=VALUE (repeatable)");
  cmd->add_option("--max-evaluations", a->max_evaluations, "objective evaluations per fit")->capture_default_str()->check(int_in(1, 1000000));
  add_format_option(*cmd, a->format, "table|json|csv", "table");
  cmd->callback([a] {
    OutputFormat f = parse_output_format(a->format, {OutputFormat::table, OutputFormat::json, OutputFormat::csv});
    validation::CalibrateRequest r;
    r.reference = a->reference, r.device = a->device, r.framework = a->framework;
    r.leave_one_out = a->leave_one_out, r.out = a->out, r.overrides = a->overrides;
    r.objective = a->objective;
    r.max_evaluations = a->max_evaluations;
    r.progress = true;
    r.apply_hint = apply_hint;
    // --architecture and --system take comma-separated lists.
    auto split = [](const std::string& s) {
      std::vector<std::string> out;
      for (size_t p = 0; !s.empty() && p != std::string::npos;) {
        size_t q = s.find(',', p);
        out.push_back(s.substr(p, q == std::string::npos ? q : q - p));
        p = q == std::string::npos ? q : q + 1;
      }
      return out;
    };
    r.architectures = split(a->architecture);
    r.systems = split(a->system);
    validation::run_calibration(r, std::cout, f);  // a FieldError "system" reads --system (main.cpp)
  });
}

}  // namespace xpusim::cli
