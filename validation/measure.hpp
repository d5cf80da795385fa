// Measured vs predicted on this machine: runs real training steps on a backend (cpu, or cuda
// on a GPU) through predict() with that engine, and turns each timing into a reference row
// (device, date and versions recorded) that validation then compares with the analytical
// prediction of the same placement (the `host` device for the CPU backend).
#pragma once
#include <string>
#include <vector>

#include "validation/reference_csv.hpp"
#include "validation/validate.hpp"

namespace xpusim::validation {

struct MeasureCase {
  std::string model;
  long long batch = 32;
};

// Small zoo models at the batch sizes of the Keras examples in Max Woolf's 2017 CPU-vs-K80
// study (reference README, study 2): short enough to time in seconds on a laptop CPU.
const std::vector<MeasureCase>& default_measure_cases();
// "model:batch,model:batch" (flag names the option in errors).
std::vector<MeasureCase> parse_measure_cases(const std::string& spec, const std::string& flag);

struct MeasureOptions {
  std::string backend = "cpu";   // engine that runs the steps: cpu or cuda
  std::string device;            // device YAML the rows name (compared by its engine); cpu: "host"
  std::string setup;             // system of the rows; cpu: "host"
  int count = 0;                 // devices of the rows (cpu: threads; 0 = all hardware threads)
  std::vector<MeasureCase> cases;
  int steps = 5, warmup = 2;
  int repeats = 1;               // runs per case (in rounds over all cases); the row keeps the median
  std::string date;              // YYYY-MM-DD written into the rows (the caller's clock)
  std::string backend_version;   // the engine's description (library versions), for the rows' note
  PredictFn predict;             // empty = xpusim::predict
  bool progress = false;
};

// UnavailableError naming --measure when the backend is not built in or cannot run here;
// otherwise the engine's description (it names library versions, e.g. oneDNN).
std::string check_backend_available(const std::string& backend);

// One train_throughput row per case; a case whose run fails becomes a row without a value
// whose note says why, so it shows up as skipped rather than disappearing.
std::vector<ReferenceRow> measure_rows(const MeasureOptions& o);

std::string today_utc();  // YYYY-MM-DD

}  // namespace xpusim::validation
