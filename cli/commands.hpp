// Each subcommand lives in its own cli/cmd_*.cpp and registers itself here.
#pragma once
#include <CLI/CLI.hpp>

#include <atomic>
#include <string>
#include <vector>

namespace xpusim::cli {

void register_all(CLI::App& app);

// One line per command (commands.cpp calls them in this order).
void register_models(CLI::App& app);
void register_graph(CLI::App& app);
void register_backends(CLI::App& app);
void register_predict(CLI::App& app);
void register_run(CLI::App& app);
void register_validate(CLI::App& app);
void register_calibrate(CLI::App& app);
void register_systolic(CLI::App& app);
void register_compare(CLI::App& app);
void register_train(CLI::App& app);
void register_sweep(CLI::App& app);
void register_list(CLI::App& app);
void register_plan(CLI::App& app);

// The file a positional config argument names: a path as given (a missing one is reported
// when it is opened), a bare name looked up under configs/KIND/, where an unknown name is one
// error that starts with `what` and lists the known names ("study: unknown study 'x' ...").
std::string config_argument(const std::string& kind, const std::string& arg, const std::string& what);

// Shared flag helpers so every command spells and validates them the same way.
void add_format_option(CLI::App& cmd, std::string& target, const std::string& choices, const std::string& def);

// --model (zoo name, model YAML or ONNX file) and --input-shape NAME=DxD... (repeatable: the
// shapes of an ONNX model's dynamic inputs), the same on every command that takes a model.
// The shapes land in `shapes` as given; parse them with input_shapes_of in the callback.
void add_model_options(CLI::App& cmd, std::string& model, std::vector<std::string>& shapes);

// Range checks on the flag's text, before CLI11 converts it: CLI11 2.1 clamps a value past
// int64 to INT64_MAX and reads "-1" into an unsigned as 2^64-1 without a word, so a typo
// would become a huge batch or seed. Errors read "--batch: ... must be an integer in [1, N]".
CLI::Validator int_in(long long lo, long long hi);
CLI::Validator uint64_any();                 // a non-negative integer that fits 64 bits
CLI::Validator finite_in(double lo, double hi);  // rejects nan, inf and values outside [lo, hi]

// While alive, SIGINT and SIGTERM set flag() instead of killing the process, so a long run
// can stop after its current step and summarise what finished; a second signal kills as
// usual. The previous handlers come back on destruction.
class StopOnSignal {
 public:
  StopOnSignal();
  ~StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;
  const std::atomic<bool>& flag() const;
};

// Test hook for the interrupt paths: when XPUSIM_TEST_INTERRUPT_AFTER=N is set, the N-th
// call raises SIGINT in this process, so a test stops a run at an exact point (after N rows,
// N measured runs) through the same handler Ctrl-C goes through. Commands call it after
// each finished point, while a StopOnSignal is alive.
void test_interrupt_point();

// Shared bounds: a per-device batch past int32 is a typo (and tensors are bounded anyway);
// more threads than kMaxThreads crash OpenMP.
constexpr long long kMaxBatch = 2147483647;
constexpr long long kMaxDevices = 65536;
constexpr long long kMaxSteps = 1000000;

// Library errors name request fields (FieldError: "batch", "target_accuracy"); the CLI shows
// the flag: "--" + field with '_' -> '-', unless the running command aliased the field to a
// flag of its own (`run` takes the replica count as --gpus).
std::string flag_for_field(const std::string& field);
void alias_field_flag(const std::string& field, const std::string& flag);

}  // namespace xpusim::cli
