// Fits of the GPU kernel model's per-generation constants (configs/architectures/NAME.yaml,
// `calibrate:`) with `xpusim calibrate --architecture`, and the leave-one-architecture-out
// check: each generation predicted with one constant set fitted on the other generations' rows.
#pragma once
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/output.hpp"
#include "validation/calibrate.hpp"

namespace xpusim::validation {

struct ArchHoldOut {
  std::string architecture;                // the generation held out
  std::vector<std::string> fitted_on;      // the generations whose rows were fitted
  int rows_held_out = 0;
  std::vector<FitParam> params;            // fitted without it
  std::optional<double> mape_pct_held_out; // its rows with those constants
  std::optional<double> mape_pct_in_fit;
  std::string reason;                      // why nothing could be fitted
};

struct ArchFitReport {
  std::vector<std::string> architectures;  // fitted together (one shared set)
  FitResult fit;
  std::vector<std::pair<std::string, std::optional<double>>> mape_by_architecture;  // after the fit
  std::vector<ArchHoldOut> leave_one_out;  // with --leave-one-out architecture
};

// `architectures` empty = every kernel-model architecture with rows. UserError when none has rows.
ArchFitReport fit_architectures(const std::vector<ReferenceRow>& rows, std::vector<std::string> architectures,
                                bool leave_one_out, int max_evaluations, const std::vector<std::string>& base_overrides);

void print_architecture_fit(std::ostream& os, const ArchFitReport& r, OutputFormat f);

}  // namespace xpusim::validation
