// The calibration overlay `xpusim calibrate --out` writes and `validate --calibration` reads:
// the device, its fitted constants, and (documentation only) how the fit went. Its own file
// so that the loader builds without the fitting machinery (the calibration_yaml fuzzer).
#pragma once
#include <string>
#include <vector>

namespace xpusim::validation {

struct CalibrationOverlay {
  std::string device;
  std::vector<std::string> overrides;  // KEY=VALUE, ready for Placement.overrides / --set
};
// Reads an overlay written by overlay_yaml (UserError "file:line: key: message").
CalibrationOverlay load_calibration_overlay(const std::string& path);

}  // namespace xpusim::validation
