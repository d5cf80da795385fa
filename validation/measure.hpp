// Measured vs predicted on this machine: runs real training steps on a backend (cpu, or cuda
// on a GPU) through predict() with that engine, and turns each timing into a reference row
// (device, date and versions recorded) that validation then compares with the analytical
// prediction of the same placement (the `host` device for the CPU backend).
#pragma once
#include <atomic>
#include <functional>
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
  std::string command;           // what made the rows, for their source column (cli/: the command
                                 // line); empty = "xpusim BACKEND measurement"
  std::string backend_version;   // the engine's description (library versions), for the rows' note
  PredictFn predict;             // empty = xpusim::predict
  bool progress = false;
  // Interrupt and resume. `stop` (set asynchronously, e.g. by SIGINT) ends the run before the
  // next timed run. `resume` holds the rows of an earlier run with the same inputs (written by
  // this function, read back from its CSV): finished cases are kept as they are, a case cut
  // short keeps its runs and gets the rest. `on_run` sees the rows as they stand after every
  // run (to keep the CSV up to date).
  const std::atomic<bool>* stop = nullptr;
  std::vector<ReferenceRow> resume;
  std::function<void(const std::vector<ReferenceRow>&)> on_run;
};

struct MeasureRun {
  std::vector<ReferenceRow> rows;  // one per case; unfinished cases have no value
  bool interrupted = false;
  size_t finished_cases = 0, resumed_cases = 0;
  long long runs_done = 0, runs_total = 0;  // timed runs of this process / of the whole measurement
};

// What measured rows depend on (backend and its versions, device, threads, cases, steps,
// warm-up, repeats), as a fingerprint every row's note carries ("inputs=HEX"): a resume with
// other inputs is refused.
std::string measure_inputs_fingerprint(const MeasureOptions& o);
// The "inputs=" token of a measured row's note (empty when it has none).
std::string row_inputs_fingerprint(const ReferenceRow& r);

// The "cpu=" description of a row measured with `--measure cpu` (host_detect.hpp's
// describe_host_cpu of the machine it ran on); empty when the note has none.
std::string row_measured_cpu(const ReferenceRow& r);
// Rows on the detected `host` device measured on another CPU than `this_cpu`: the `host`
// device predicts the machine that validates, so such rows compare two machines. `rows` = 0
// when every such row matches or none says where it ran; `cpu` = the first other CPU.
struct HostCpuMismatch {
  int rows = 0;
  std::string cpu;
};
HostCpuMismatch host_cpu_mismatch(const std::vector<ReferenceRow>& rows, const std::string& this_cpu);

// UnavailableError naming --measure when the backend is not built in or cannot run here;
// otherwise the engine's description (it names library versions, e.g. oneDNN).
std::string check_backend_available(const std::string& backend);

// One train_throughput row per case; a case whose run fails becomes a row without a value
// whose note says why, so it shows up as skipped rather than disappearing.
std::vector<ReferenceRow> measure_rows(const MeasureOptions& o);
// The same, with the interrupt and resume bookkeeping. UserError when `o.resume` rows do
// not belong to these cases and inputs.
MeasureRun measure(const MeasureOptions& o);

std::string today_utc();  // YYYY-MM-DD

}  // namespace xpusim::validation
