#include "tests/unit/validation_fixture.hpp"

#include <atomic>
#include <fstream>
#include <unistd.h>

#include "common/error.hpp"
#include "common/spec_reader.hpp"
#include "models/work.hpp"
#include "models/zoo.hpp"
#include "xpusim_test_paths.hpp"

namespace xpusim::test {

namespace fs = std::filesystem;

namespace {
struct FakeDevice {
  double peak_tflops, efficiency, overhead_s, memory_gib, compile_time_s;
};

FakeDevice read_fake_device(const Placement& p) {
  std::string path = device_yaml_path(p.device);
  YAML::Node n = load_yaml_file(path);
  apply_overrides(n, p.overrides);
  SpecReader r(n, path);
  FakeDevice d;
  r.text("engine", std::nullopt, "engine");
  d.peak_tflops = r.number("peak_tflops", std::nullopt, "TFLOP/s", "peak", [](double v) { return v > 0 ? "" : "must be > 0"; });
  d.efficiency = r.number("compute_efficiency", std::nullopt, "", "fraction of peak",
                          [](double v) { return v > 0 && v <= 1 ? "" : "must be in (0, 1]"; });
  d.overhead_s = r.number("step_overhead_s", 0.0, "s", "per step", [](double v) { return v >= 0 ? "" : "must be >= 0"; });
  d.memory_gib = r.number("memory_gib", 16.0, "GiB", "capacity");
  d.compile_time_s = r.number("compile_time_s", 0.0, "s", "one-off");
  r.child("calibrate", "fittable constants");
  r.text("source", std::string(""), "source");
  r.finish();
  return d;
}
}  // namespace

StepReport fake_run_step(const StepRequest& req) {
  FakeDevice d = read_fake_device(req.placement.requested);
  GraphTotals t = graph_totals(*req.graph);
  StepReport r;
  r.engine = "fake";
  r.device = req.placement.requested.device;
  r.count = req.placement.count;
  r.batch_per_device = req.graph->batch;
  r.global_batch = req.graph->batch * req.placement.count;
  r.step_time_s = t.flops_train_step / (d.peak_tflops * 1e12 * d.efficiency) + d.overhead_s;
  r.throughput_samples_per_s = static_cast<double>(r.global_batch) / r.step_time_s;
  r.memory_bytes = t.peak_bytes;
  r.memory_capacity_bytes = static_cast<int64_t>(d.memory_gib * 1073741824.0);
  r.fits_in_memory = r.memory_bytes <= r.memory_capacity_bytes;
  r.compile_time_s = d.compile_time_s;
  return r;
}

StepReport fake_predict(const PredictRequest& q) {
  if (q.engine == "cpu") {
    // Stands in for a measured CPU run; imdb_fasttext models a backend that fails.
    if (q.model == "imdb_fasttext") throw UnavailableError("fake cpu backend: cannot run imdb_fasttext");
    PredictRequest p = q;
    p.engine.clear();
    p.placement.device = "host";
    p.placement.count = q.threads > 0 ? q.threads : 1;
    StepReport r = fake_predict(p);
    r.engine = "cpu";
    r.extra["library_version"] = "fake-1.0";
    return r;
  }
  std::string engine = q.engine.empty() ? engine_for_device(q.placement.device) : q.engine;
  if (engine != "fake") throw UserError("unknown engine '" + engine + "' (test predictor knows only fake)");
  GraphOptions o;
  o.batch = q.batch_per_device;
  if (!parse_precision(q.precision, o.precision)) throw UserError("--precision: unknown precision '" + q.precision + "'");
  ModelSpec spec = find_model(q.model);
  if (!parse_optimizer(spec.optimizer, o.training_options.optimizer)) throw UserError("bad optimizer");
  o.training_options.replicas = q.placement.count;
  OpGraph g = build_graph(spec, o);
  StepRequest s;
  s.graph = &g;
  s.model = spec.name;
  s.placement.requested = q.placement;
  s.placement.count = q.placement.count;
  s.placement.replicas = q.placement.count;
  s.data = q.data;
  StepReport r = fake_run_step(s);
  r.model = spec.name;
  return r;
}

double fake_throughput(const std::string& model, long long batch, int count, double peak_tflops, double efficiency,
                       double overhead_s) {
  GraphOptions o;
  o.batch = batch;
  ModelSpec spec = find_model(model);
  parse_optimizer(spec.optimizer, o.training_options.optimizer);
  o.training_options.replicas = count;
  OpGraph g = build_graph(spec, o);
  double step = graph_totals(g).flops_train_step / (peak_tflops * 1e12 * efficiency) + overhead_s;
  return static_cast<double>(batch * count) / step;
}

FakeConfigDir::FakeConfigDir() : previous_(config_dir()) {
  static std::atomic<int> counter{0};
  dir_ = fs::temp_directory_path() /
         ("xpusim_validation_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  fs::remove_all(dir_);
  fs::create_directories(dir_ / "devices");
  fs::path real = XPUSIM_DEFAULT_CONFIG_DIR;
  fs::create_directory_symlink(real / "models", dir_ / "models");
  fs::create_directory_symlink(real / "systems", dir_ / "systems");
  fs::create_symlink(real / "datasets.yaml", dir_ / "datasets.yaml");
  write_device("fake_gpu",
               "engine: fake\npeak_tflops: 10\ncompute_efficiency: 0.5\nstep_overhead_s: 0.002\nmemory_gib: 4\n"
               "calibrate: [compute_efficiency, step_overhead_s]\nsource: unit test\n");
  write_device("fake_tpu",
               "engine: fake\npeak_tflops: 20\ncompute_efficiency: 0.6\nstep_overhead_s: 0.001\nmemory_gib: 8\n"
               "compile_time_s: 30\ncalibrate: [compute_efficiency]\nsource: unit test\n");
  write_device("k80", "engine: fake\npeak_tflops: 4\ncompute_efficiency: 0.5\nmemory_gib: 12\nsource: unit test\n");
  write_device("host", "engine: fake\npeak_tflops: 0.1\ncompute_efficiency: 0.5\nmemory_gib: 24\n"
                       "calibrate: [compute_efficiency]\nsource: unit test\n");
  write_device("broken", "engine: fake\npeak_tflops: -1\ncompute_efficiency: 0.5\nsource: unit test\n");
  write_device("nocal", "engine: fake\npeak_tflops: 1\ncompute_efficiency: 0.5\nsource: unit test\n");
  write_device("badcal", "engine: fake\npeak_tflops: 1\ncompute_efficiency: 0.5\ncalibrate: [source]\nsource: unit test\n");
  set_config_dir(dir_.string());
}

FakeConfigDir::~FakeConfigDir() {
  set_config_dir(previous_);
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

void FakeConfigDir::write_device(const std::string& name, const std::string& yaml) const {
  std::ofstream(dir_ / "devices" / (name + ".yaml")) << yaml;
}

}  // namespace xpusim::test
