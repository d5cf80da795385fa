// Checks the analytical engine against the published reference figures: reads the
// `train_throughput` rows of a reference CSV (shared/reference/published_calibration.csv
// layout) whose device the analytical engine models, predicts each one, and reports the
// error per row and the MAPE per device. Used by a unit test and by xpusim_analytical_check.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace xpusim::analytical {

struct ReferenceRow {
  int line = 0;                 // 1-based line in the CSV
  std::string device, setup, framework, model, precision, data;
  int num_devices = 1;
  long long batch_per_device = 1;
  double value = 0;             // published images/s for the whole job
};

struct RowResult {
  ReferenceRow row;
  double predicted = 0;         // images/s
  double error_pct = 0;         // 100 * (predicted - value) / value
};

// Rows with metric train_throughput whose device YAML names engine `analytical`.
std::vector<ReferenceRow> load_reference_rows(const std::string& csv_path);
// `overrides`: device name -> KEY=VALUE list applied with the device YAML (calibration).
std::vector<RowResult> check_rows(const std::vector<ReferenceRow>& rows,
                                  const std::map<std::string, std::vector<std::string>>& overrides = {},
                                  bool progress = false);
// Mean absolute percentage error per device, plus "all".
std::map<std::string, double> mape_by_device(const std::vector<RowResult>& results);

}  // namespace xpusim::analytical
