// Leave one study out, over every fitted constant: for each study of a reference CSV (its
// `source`), the whole calibration is redone without that study's rows, and the study's rows
// are then predicted with the result. It answers "how well does xpusim predict a study it has
// never seen", which a per-device leave-one-out cannot: most constant sets are fitted on one
// study only, and without it they fall back to what nothing was fitted on.
//
// The calibration it redoes (docs/validation.md, "Leave one study out"):
//   1. device constant sets (a device YAML with `calibrate:` and rows of its own), parents of an
//      efficiency_from chain before their children; each fitted on its rows that use a profile
//      without fitted constants (fit_rows), with the values its parents got in this round;
//   2. framework profiles with `calibrate:`, bases before the profiles that name them
//      (`base:`), fitted on their rows with the devices' values and their base's.
// A set is refitted when its rows include the held-out study or a set before it changed; with
// no rows left it takes its declared defaults (a device's unfitted priors, a profile's neutral
// values) and is reported as "unfitted". A device that takes constants from a changed device
// (efficiency_from), and a profile whose base changed, get the new values for the keys they do
// not set themselves: in their fits and in the held-out predictions of their rows, so no row is
// predicted with constants that were fitted on its own study.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/output.hpp"
#include "validation/calibrate.hpp"

namespace xpusim::validation {

struct ConstantSetRound {
  std::string set;                  // "device p100_sxm2" or "framework keras_tf1_13_gpu"
  std::string action;               // refit | unfitted | unchanged
  int rows = 0;                     // rows it was fitted on in this round (refit)
  std::vector<FitParam> params;     // initial = today's value, fitted = this round's
  std::string reason;               // unfitted: why no fit was possible
};

struct StudyHoldOut {
  std::string study;                         // the CSV's source
  int rows = 0;                              // the study's rows with a fit metric
  std::optional<double> mape_pct_held_out;   // its rows, constants fitted without it
  std::optional<double> mape_pct_in_sample;  // its rows, today's constants
  std::vector<GroupError> by_metric_held_out;
  std::vector<double> held_out_errors_pct;   // signed, one per predicted row
  int rows_predicted = 0;
  std::vector<ConstantSetRound> sets;
};

struct StudyHoldOutOptions {
  PredictFn predict;          // empty = xpusim::predict
  int max_evaluations = 300;  // per fit
  bool progress = false;
};

std::vector<StudyHoldOut> leave_one_study_out(const std::vector<ReferenceRow>& rows, const StudyHoldOutOptions& o);
// Mean absolute error over every held-out row of every study.
std::optional<double> leave_one_study_out_mape(const std::vector<StudyHoldOut>& r);

nlohmann::json leave_one_study_out_json(const std::vector<StudyHoldOut>& r);
// table: a line per study, then what each round refitted; csv: a row per study.
void print_leave_one_study_out(std::ostream& os, const std::vector<StudyHoldOut>& r, OutputFormat f);

}  // namespace xpusim::validation
