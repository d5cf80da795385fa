// `xpusim validate`: predicted vs reference for every row of a reference CSV (or for rows
// measured on this machine with --measure), with errors per row and MAPE per device, model,
// metric and framework; --report writes an HTML page with SVG plots.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>

#include "cli/commands.hpp"
#include "common/checked_io.hpp"
#include "common/error.hpp"
#include "common/progress.hpp"
#include "devices/analytical/device_spec.hpp"
#include "devices/analytical/host_detect.hpp"
#include "predict/predict.hpp"
#include "validation/calibrate.hpp"
#include "validation/framework_overlay.hpp"
#include "validation/measure.hpp"
#include "validation/report_html.hpp"
#include "validation/validate.hpp"

namespace xpusim::cli {

namespace {
struct ValidateArgs {
  std::string reference, framework;
  std::string format;
  std::string report;
  std::string measure;
  std::string measure_cases;
  std::string measure_out;
  std::string measure_device;
  int measure_steps = 5;
  int measure_warmup = 2;
  int measure_repeats = 3;
  int threads = 0;
  bool resume = false;
  std::vector<std::string> calibrations;
  std::vector<std::string> sets;
  std::string baseline = "k80";
};
// --set names a device some row is on and keys its YAML has: checked once, up front, so that a
// typo is one error (exit 2) rather than every row on the device skipped with its reason.
// framework.KEY is checked against the profiles the device's rows are predicted under (the
// --framework profile, else each row's framework column); system.KEY is left to each row.
// (A calibration overlay's keys are its loader's to check, and may name a device no row is on.)
void check_device_overrides(const std::map<std::string, std::vector<std::string>>& overrides,
                            const std::map<std::string, std::set<std::string>>& row_frameworks) {
  for (const auto& [device, kvs] : overrides) {
    const auto rows = row_frameworks.find(device);
    if (rows == row_frameworks.end()) throw UserError("--set: no row is on device '" + device + "'");
    const PlacementOverrides split = split_placement_overrides(kvs);
    const std::vector<std::string>& device_kvs = split.device;
    const std::vector<std::string>& framework_kvs = split.framework;
    try {
      if (engine_for_device(device) != "analytical") continue;
      analytical::load_device_spec(device, device_kvs);
      if (framework_kvs.empty()) continue;
      bool any_profile = false;
      for (const auto& fw : rows->second) {
        std::string file;
        try {
          file = fw.empty() ? "" : find_framework_file(fw, "analytical");
        } catch (const UserError&) {
          continue;  // no such profile: its rows are skipped with that reason
        }
        if (file.empty()) continue;
        any_profile = true;
        load_framework_spec(file, framework_kvs);
      }
      if (!any_profile) throw UserError("framework.*: no row on '" + device + "' names a framework profile");
    } catch (const UserError& e) {
      // The loader names its "set: KEY=VALUE"; name the flag as the user wrote it.
      const std::string m = e.what();
      throw UserError(m.rfind("set: ", 0) == 0 ? "--set " + device + ":" + m.substr(5) : "--set " + device + ": " + m);
    }
  }
}
}  // namespace

void register_validate(CLI::App& app) {
  auto a = std::make_shared<ValidateArgs>();
  auto* cmd = app.add_subcommand("validate", "compare predictions with published or measured results (MAPE tables, report)");
  cmd->add_option("--reference", a->reference, "reference CSV (format of tests/data/reference/published_calibration.csv)");
  add_format_option(*cmd, a->format, "table|json|csv", "table");
  cmd->add_option("--report", a->report, "write DIR/index.html (SVG plots) and DIR/validation.json");
  cmd->add_option("--calibration", a->calibrations,
                  "apply a calibration overlay written by `xpusim calibrate` to its device (repeatable)");
  cmd->add_option("--set", a->sets,
                  "DEVICE:KEY=VALUE: override a field of DEVICE's YAML for every row on it (repeatable), e.g. "
                  "host:frequency_ghz=2.445");
  cmd->add_option("--framework", a->framework,
                  "predict every row under this framework profile (default: the profile the row's framework column names)");
  cmd->add_option("--baseline-device", a->baseline, "device of the *_relative_to_k80 baselines")->capture_default_str();
  cmd->add_option("--measure", a->measure,
                  "cpu|cuda: run small zoo models on this machine's backend, keep the rows, compare with the prediction");
  cmd->add_option("--measure-cases", a->measure_cases, "model:batch,... to measure (default: the Keras examples of study 2)");
  cmd->add_option("--measure-out", a->measure_out,
                  "CSV for the measured rows (default: <backend>-<device>-<date>.csv in the current directory)");
  cmd->add_option("--measure-device", a->measure_device,
                  "device YAML the measured rows are predicted with (default: host for cpu; required for cuda)");
  cmd->add_option("--measure-steps", a->measure_steps, "timed steps per case")->capture_default_str()->check(int_in(1, kMaxSteps));
  cmd->add_option("--measure-warmup", a->measure_warmup, "untimed warm-up steps per case")->capture_default_str()->check(int_in(0, kMaxSteps));
  cmd->add_option("--measure-repeats", a->measure_repeats,
                  "runs per case, in rounds over all cases; each row keeps the median run")
      ->capture_default_str()
      ->check(int_in(1, 1000));
  cmd->add_flag("--resume", a->resume,
                "continue the measured rows in --measure-out FILE: finished cases are kept, the others measured");
  cmd->add_option("--threads", a->threads, "cpu: threads (0 = all hardware threads)")->capture_default_str()->check(int_in(0, 1024));
  cmd->callback([a, cmd] {
    using namespace validation;
    OutputFormat f = parse_output_format(a->format, {OutputFormat::table, OutputFormat::json, OutputFormat::csv});
    if (a->reference.empty() == a->measure.empty())
      throw UserError("--reference: give exactly one of --reference FILE or --measure cpu|cuda");
    // The measurement options do nothing with --reference: a user who gave them expected a
    // measurement, and silently validating a file instead would hide that.
    if (a->measure.empty())
      for (const char* opt : {"--measure-cases", "--measure-out", "--measure-device", "--measure-steps", "--measure-warmup",
                              "--measure-repeats", "--resume", "--threads"})
        if (cmd->count(opt) > 0) throw UserError(std::string(opt) + ": applies to --measure only, not to --reference");
    ValidateOptions vo;
    vo.progress = true;
    vo.baseline_device = a->baseline;
    vo.framework = a->framework;
    for (const auto& path : a->calibrations) {
      CalibrationOverlay ov = load_calibration_overlay(path);
      // A framework fit's overlay ("framework X") reaches the rows profile X predicts.
      const std::string stem = framework_overlay_stem(ov.device);
      auto& list = stem.empty() ? vo.overrides[ov.device] : vo.framework_overrides[stem];
      list.insert(list.end(), ov.overrides.begin(), ov.overrides.end());
    }
    // --set's own overrides, checked against the rows below (a calibration overlay is not).
    std::map<std::string, std::vector<std::string>> sets;
    for (const auto& kv : a->sets) {
      const size_t colon = kv.find(':');
      if (colon == std::string::npos || colon == 0 || kv.find('=', colon) == std::string::npos)
        throw UserError("--set: '" + kv + "' is not DEVICE:KEY=VALUE (e.g. host:frequency_ghz=2.445)");
      sets[kv.substr(0, colon)].push_back(kv.substr(colon + 1));
    }
    for (const auto& [device, kvs] : sets) {
      auto& list = vo.overrides[device];
      list.insert(list.end(), kvs.begin(), kvs.end());
    }
    std::vector<ReferenceRow> rows;
    std::string name = a->reference;
    if (!a->measure.empty()) {
      if (a->measure != "cpu" && a->measure != "cuda") throw UserError("--measure: '" + a->measure + "' is not cpu or cuda");
      if (a->measure_steps <= 0) throw UserError("--measure-steps: must be > 0");
      if (a->measure_warmup < 0) throw UserError("--measure-warmup: must be >= 0");
      if (a->measure_repeats <= 0) throw UserError("--measure-repeats: must be > 0");
      if (a->threads < 0) throw UserError("--threads: must be >= 0");
      MeasureOptions mo;
      mo.backend_version = check_backend_available(a->measure);
      mo.backend = a->measure;
      mo.device = a->measure_device.empty() ? (a->measure == "cpu" ? "host" : "") : a->measure_device;
      if (mo.device.empty()) throw UserError("--measure-device: name the device YAML of this GPU (e.g. v100_sxm2_16gb)");
      check_device_overrides(sets, {{mo.device, {a->framework.empty() ? "xpusim-" + a->measure : a->framework}}});
      mo.setup = a->measure == "cpu" ? "host" : "";
      mo.count = a->measure == "cpu" ? a->threads : 1;
      mo.cases = a->measure_cases.empty() ? default_measure_cases() : parse_measure_cases(a->measure_cases, "--measure-cases");
      mo.steps = a->measure_steps;
      mo.warmup = a->measure_warmup;
      mo.repeats = a->measure_repeats;
      mo.date = today_utc();
      mo.command = "xpusim validate --measure " + mo.backend;
      mo.progress = true;
      if (a->resume && a->measure_out.empty())
        throw UserError("--resume: needs --measure-out FILE (the measured rows to continue)");
      std::string out = a->measure_out;
      if (out.empty())
        // The current directory, never the checkout: an installed xpusim has no source tree.
        out = a->measure + "-" + mo.device + "-" + mo.date + ".csv";
      std::error_code ec;
      if (a->resume && std::filesystem::exists(out, ec)) {
        mo.resume = read_reference_csv(out);
        const std::string inputs = measure_inputs_fingerprint(mo);
        for (const auto& r : mo.resume)
          if (row_inputs_fingerprint(r) != inputs)
            throw UserError("--resume: " + out + ":" + std::to_string(r.line) +
                            ": was measured with other inputs (inputs=" + row_inputs_fingerprint(r) +
                            "; these options give " + inputs +
                            "): the backend, device, threads, cases, steps, warm-up and repeats must be the same; "
                            "run without --resume, or give another --measure-out");
      }
      std::filesystem::path p(out);
      if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
      if (ec) throw UserError("--measure-out: cannot create directory '" + p.parent_path().string() + "': " + ec.message());
      // Every run rewrites the file atomically: Ctrl-C or a crash keeps what was measured.
      mo.on_run = [&](const std::vector<ReferenceRow>& now) {
        write_file_atomic(out, [&](std::ostream& os) { write_reference_csv(os, now); }, "--measure-out");
        test_interrupt_point();
      };
      StopOnSignal guard;
      mo.stop = &guard.flag();
      MeasureRun run = measure(mo);
      rows = run.rows;
      write_file_atomic(out, [&](std::ostream& os) { write_reference_csv(os, rows); }, "--measure-out");
      if (run.interrupted)
        throw InterruptedError("measure stopped after " + std::to_string(run.runs_done) + " runs: " +
                               std::to_string(run.finished_cases) + " of " + std::to_string(rows.size()) +
                               " cases finished (" + std::to_string(run.resumed_cases) +
                               " from the earlier run); the rows and partial runs are kept in " + out +
                               "; continue with --measure-out " + out + " --resume");
      std::cerr << "xpusim: measured rows written to " << out << "\n";
      name = out;
    } else {
      rows = read_reference_csv(a->reference);
      std::map<std::string, std::set<std::string>> row_frameworks;
      for (const auto& r : rows)
        row_frameworks[r.device].insert(a->framework.empty() ? request_for_row(r).placement.framework : a->framework);
      check_device_overrides(sets, row_frameworks);
      // Measured rows of another CPU, predicted for this one: say so, unless the user pinned it.
      if (!vo.overrides.count("host")) {
        const std::string here = analytical::describe_host_cpu(analytical::detect_host_cpu());
        const HostCpuMismatch m = host_cpu_mismatch(rows, here);
        if (m.rows > 0)
          std::cerr << "xpusim: note: " << m.rows << (m.rows == 1 ? " row" : " rows")
                    << " on the `host` device ran on another CPU (" << m.cpu << ") than this machine (" << here
                    << "), which `host` predicts; pin the measured machine's figures with --set host:KEY=VALUE "
                       "(detect=false, frequency_ghz, compiled_simd_fp32_lanes, max_vcpus, ...; docs/analytical-model.md)\n";
      }
    }
    ValidationResult res = validate_rows(rows, vo, name);
    if (!a->report.empty()) write_report(res, a->report);
    print_validation(std::cout, res, f);
  });
}

}  // namespace xpusim::cli
