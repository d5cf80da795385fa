#include "cli/commands.hpp"

#include <signal.h>

#include <cerrno>
#include <csignal>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>

#include "common/config_paths.hpp"
#include "common/error.hpp"
#include "common/output.hpp"

namespace xpusim::cli {

namespace {
std::map<std::string, std::string>& field_aliases() {
  static std::map<std::string, std::string> m;
  return m;
}
}  // namespace

void alias_field_flag(const std::string& field, const std::string& flag) { field_aliases()[field] = flag; }

std::string flag_for_field(const std::string& field) {
  auto it = field_aliases().find(field);
  if (it != field_aliases().end()) return it->second;
  std::string flag = "--" + field;
  for (char& c : flag)
    if (c == '_') c = '-';
  return flag;
}

void register_all(CLI::App& app) {
  register_models(app);
  register_graph(app);
  register_backends(app);
  register_predict(app);
  register_run(app);
  register_validate(app);
  register_calibrate(app);
  register_systolic(app);
  register_compare(app);
  register_train(app);
  register_sweep(app);
  register_list(app);
  register_plan(app);
}

CLI::Validator int_in(long long lo, long long hi) {
  const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return CLI::Validator(
      [lo, hi, range](std::string& s) -> std::string {
        long long v = 0;
        auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi)
          return "'" + s + "' must be an integer in " + range;
        return "";
      },
      "INT in " + range);
}

CLI::Validator uint64_any() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        unsigned long long v = 0;
        auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec != std::errc() || end != s.data() + s.size()) return "'" + s + "' must be an integer in [0, 2^64)";
        return "";
      },
      "UINT64");
}

CLI::Validator finite_in(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        char* end = nullptr;
        errno = 0;
        double v = std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v) || v < lo || v > hi)
          return "'" + s + "' must be a finite number in [" + fmt_g(lo, 6) + ", " + fmt_g(hi, 6) + "]";
        return "";
      },
      "NUMBER");
}

namespace {
std::atomic<bool> g_stop{false};
// The handler only loads and stores this flag (plus signal/raise): async-signal-safe as long as
// the atomic needs no lock.
static_assert(std::atomic<bool>::is_always_lock_free);
struct sigaction g_old_int, g_old_term;
// The handler runs on its own stack. oneDNN 2.x's generated GEMM kernels (AVX2 and AVX-512)
// point rsp into the heap while they run, so a signal handled on the interrupted "stack" writes
// its frame over heap blocks: Ctrl-C during training corrupted the heap ("corrupted
// double-linked list" freeing a oneDNN memory). oneDNN issue #4845, fixed in oneDNN 3.11 by
// PR #4855; Debian 12 ships 2.6. With SA_ONSTACK the kernel switches to this stack first.
alignas(16) char g_alt_stack[1 << 16];
stack_t g_old_alt_stack;
bool g_alt_stack_set = false;
extern "C" void on_stop_signal(int sig) {
  if (g_stop.load()) {  // second signal: stop waiting for the step to finish
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_stop.store(true);
}
}  // namespace

StopOnSignal::StopOnSignal() {
  g_stop.store(false);
  stack_t ss{};
  ss.ss_sp = g_alt_stack;
  ss.ss_size = sizeof(g_alt_stack);
  g_alt_stack_set = sigaltstack(&ss, &g_old_alt_stack) == 0;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = g_alt_stack_set ? SA_ONSTACK : 0;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

StopOnSignal::~StopOnSignal() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  if (g_alt_stack_set) sigaltstack(&g_old_alt_stack, nullptr);
}

const std::atomic<bool>& StopOnSignal::flag() const { return g_stop; }

std::string config_argument(const std::string& kind, const std::string& arg, const std::string& what) {
  if (is_config_path(arg)) return arg;  // opened (and a missing file reported) by the loader
  try {
    return find_config_file(kind, arg, what, what);
  } catch (const FieldError& e) {
    throw UserError(what + ": " + e.message());
  }
}

void add_model_options(CLI::App& cmd, std::string& model, std::vector<std::string>& shapes) {
  cmd.add_option("--model", model, "zoo model (xpusim models), model YAML path or ONNX file (*.onnx, docs/onnx.md)")
      ->required();
  cmd.add_option("--input-shape", shapes,
                 "ONNX models: shape of an input with dynamic dimensions, NAME=1x3x224x224 (dim 0 is the batch: "
                 "--batch sets it); repeatable");
}

void test_interrupt_point() {
  static const long long after = [] {
    const char* v = std::getenv("XPUSIM_TEST_INTERRUPT_AFTER");
    return v ? std::atoll(v) : 0LL;
  }();
  static long long calls = 0;
  if (after > 0 && ++calls == after) std::raise(SIGINT);
}

void add_format_option(CLI::App& cmd, std::string& target, const std::string& choices, const std::string& def) {
  target = def;
  cmd.add_option("--format", target, "output format: " + choices)->capture_default_str();
}

}  // namespace xpusim::cli
