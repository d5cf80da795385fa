// One calibration run as `xpusim calibrate` and Python's xpusim.calibrate both do it: pick the
// fit the request names (a device's, a framework profile's or GPU architectures' constants, or
// every fit redone without each study), run it, write the overlay, print the result. Shared so
// the two front ends cannot drift apart; bad input is a FieldError naming the request field.
#pragma once
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "common/output.hpp"
#include "validation/calibrate.hpp"

namespace xpusim::validation {

struct CalibrateRequest {
  std::string reference;                  // reference CSV path
  std::string device;                     // fit this device's `calibrate:` constants, or
  std::string framework;                  // this framework profile's, or
  std::vector<std::string> architectures; // these GPU architectures' (one shared set), or
  std::vector<std::string> systems;       // these systems' (configs/systems/, one shared set)
  std::string leave_one_out;              // "" | model | study | architecture
  // "" or "log_error": ln(predicted/reference); "scaling": each multi-device row's log error less
  // its 1-device row's (device, framework and system fits; CalibrateOptions).
  std::string objective;
  std::string out;                        // write the fitted values as a YAML overlay here ("" = none)
  std::vector<std::string> overrides;     // device YAML KEY=VALUE before fitting (field "set")
  int max_evaluations = 300;              // objective evaluations per fit
  bool progress = false;                  // progress lines on stderr
  // The "# Apply with ..." comment of the overlay, in the caller's words (cli/ names flags).
  std::function<std::string(const FitResult&)> apply_hint;
};

// Runs the request and prints the result in `f` (table, json or csv) to `os`. FieldError naming
// "reference", "device", "framework", "architecture", "system", "objective", "leave_one_out", "out", "set" or
// "max_evaluations" for bad input.
void run_calibration(const CalibrateRequest& r, std::ostream& os, OutputFormat f);

}  // namespace xpusim::validation
