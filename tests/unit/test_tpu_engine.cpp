// The tpu_systemc engine end to end through predict(): the ResNet-50 v2-8 targets, the infeed
// bound, memory, --set overrides, and repeated simulations in one process.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "predict/predict.hpp"
#include "tests/unit/predict_request.hpp"
#include "sim/tpu/tpu_spec.hpp"
#include "xpusim_test_paths.hpp"

using namespace xpusim;

namespace {

PredictRequest v2_8(const std::string& model, int64_t batch, DataSource data,
                    const std::string& system = "cloud_tpu_v2-8") {
  PredictRequest r = fixtures::predict_request("tpu_v2", 8, model, batch, "bf16", system);
  r.data = data;
  return r;
}

}  // namespace

TEST_CASE("ResNet-50 on a v2-8 at 128 per core reaches the published throughput", "[tpu][engine]") {
  // Published (tests/data/reference/published_calibration.csv, RiseML 2018): 3,186 img/s on
  // synthetic data and 2,796 img/s on real ImageNet. The model must be within 10%.
  StepReport syn = predict(v2_8("resnet50", 128, DataSource::synthetic));
  CHECK(syn.engine == "tpu_systemc");
  CHECK(syn.global_batch == 1024);
  CHECK(syn.fits_in_memory);
  CHECK(syn.throughput_samples_per_s == Approx(3186).epsilon(0.10));
  CHECK(syn.throughput_samples_per_s == Approx(syn.global_batch / syn.step_time_s));
  StepReport real = predict(v2_8("resnet50", 128, DataSource::real));
  CHECK(real.throughput_samples_per_s == Approx(2796).epsilon(0.10));
  CHECK(real.throughput_samples_per_s <= syn.throughput_samples_per_s);
  for (Resource u : {Resource::mxu, Resource::vector, Resource::hbm, Resource::ici, Resource::infeed}) {
    REQUIRE(syn.utilization.count(u));
    CHECK(syn.utilization.at(u) >= 0.0);
    CHECK(syn.utilization.at(u) <= 1.0 + 1e-9);
  }
}

TEST_CASE("a slow host makes the step infeed-bound", "[tpu][engine]") {
  StepReport cloud = predict(v2_8("resnet50", 128, DataSource::real));
  StepReport colab = predict(v2_8("resnet50", 128, DataSource::real, "colab_tpu_v2-8"));
  CHECK(colab.bottleneck == Resource::infeed);
  CHECK(colab.throughput_samples_per_s < 0.5 * cloud.throughput_samples_per_s);
  CHECK(colab.extra.at("infeed_stall_s").get<double>() > 0);
  // Synthetic data needs no host: the same board is not infeed-bound.
  StepReport colab_syn = predict(v2_8("resnet50", 128, DataSource::synthetic, "colab_tpu_v2-8"));
  CHECK(colab_syn.bottleneck != Resource::infeed);
}

TEST_CASE("a batch that does not fit HBM reports fits_in_memory false", "[tpu][engine]") {
  StepReport r = predict(v2_8("resnet50", 8192, DataSource::synthetic));
  CHECK_FALSE(r.fits_in_memory);
  CHECK(r.memory_bytes > r.memory_capacity_bytes);
  CHECK(r.extra.at("memory_needed_bytes").get<int64_t>() == r.memory_bytes);
}

TEST_CASE("set overrides change device fields and are validated like the file", "[tpu][engine]") {
  PredictRequest base = v2_8("resnet50_cifar10", 64, DataSource::synthetic);
  StepReport b = predict(base);
  PredictRequest faster = base;
  faster.placement.overrides = {"hbm_bandwidth_gbps=1400", "mxu_rows=256"};
  StepReport f = predict(faster);
  CHECK(f.step_time_s < b.step_time_s);
  PredictRequest bad = base;
  bad.placement.overrides = {"mxu_rows=0"};
  CHECK_THROWS_AS(predict(bad), UserError);
  CHECK_THROWS_WITH(predict(bad), Catch::Contains("set: mxu_rows=0") && Catch::Contains("mxu_rows: must be in [2, 4096]"));
  bad.placement.overrides = {"hbm_bandwith_gbps=1400"};
  CHECK_THROWS_WITH(predict(bad), Catch::Contains("hbm_bandwith_gbps: unknown key"));
  bad.placement.overrides = {"hbm_bandwidth_gbps=fast"};
  CHECK_THROWS_AS(predict(bad), UserError);
  bad.placement.overrides = {"clock_mhz"};
  CHECK_THROWS_WITH(predict(bad), Catch::Contains("expected KEY=VALUE"));
}

TEST_CASE("many simulations in one process give the same results as fresh processes", "[tpu][engine]") {
  PredictRequest a = v2_8("resnet50_cifar10", 32, DataSource::synthetic);
  PredictRequest b = v2_8("mnist_cnn", 128, DataSource::real);
  StepReport a1 = predict(a);
  StepReport b1 = predict(b);
  StepReport a2 = predict(a);
  CHECK(a1.step_time_s == a2.step_time_s);  // bit-identical, not approximately
  CHECK(a1.to_json().dump() == a2.to_json().dump());
  CHECK(a1.step_time_s != b1.step_time_s);
#ifdef XPUSIM_BIN
  // The same request in a fresh process (the CLI) gives the same number to the last bit.
  std::string cmd = std::string(XPUSIM_BIN) +
                    " predict --device tpu_v2 --count 8 --system cloud_tpu_v2-8 --model mnist_cnn --batch 128"
                    " --precision bf16 --data real --format json";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  REQUIRE(pclose(p) == 0);
  auto j = nlohmann::json::parse(out);
  CHECK(j.at("step_time_s").get<double>() == b1.step_time_s);
#endif
}

TEST_CASE("bad device YAML: file:line: key: message", "[tpu][engine]") {
  auto path = std::filesystem::temp_directory_path() / "xpusim_bad_tpu.yaml";
  {
    std::ofstream f(path);
    f << "name: bad\nengine: tpu_systemc\ndefault_system: cloud_tpu_v2-8\nclock_mhz: -5\n";
  }
  CHECK_THROWS_WITH(tpu::load_tpu_spec(path.string()), Catch::Contains(path.string() + ":4: clock_mhz: must be in [1, 100000] MHz"));
  std::filesystem::remove(path);
}

TEST_CASE("the trace is a trace-event JSON: a named process per core, a track per unit, FLOPs and bytes",
          "[tpu][engine]") {
  auto path = (std::filesystem::temp_directory_path() / "xpusim_tpu_trace.json").string();
  PredictRequest r = v2_8("resnet50_cifar10", 32, DataSource::synthetic);
  r.trace_path = path;
  StepReport rep = predict(r);
  std::ifstream in(path);
  REQUIRE(in.good());
  auto j = nlohmann::json::parse(in);
  std::map<int, std::set<std::string>> tracks;
  std::map<int, std::string> process;
  std::map<int, int> complete;
  double last_end_us = 0, hbm_bytes = 0, mxu_flops = 0;
  std::set<std::string> mxu_ops;
  double mxu_op_flops = 0;
  for (const auto& e : j.at("traceEvents")) {
    int pid = e.at("pid").get<int>();
    if (e.at("ph") == "M" && e.at("name") == "thread_name") tracks[pid].insert(e.at("args").at("name").get<std::string>());
    if (e.at("ph") == "M" && e.at("name") == "process_name") process[pid] = e.at("args").at("name").get<std::string>();
    if (e.at("ph") != "X") continue;
    ++complete[pid];
    if (pid != 0) continue;
    last_end_us = std::max(last_end_us, e.at("ts").get<double>() + e.at("dur").get<double>());
    const auto& a = e.at("args");
    if (e.at("tid") == 2 || e.at("tid") == 3) hbm_bytes += a.at("bytes").get<double>();  // hbm_read, hbm_write
    if (e.at("tid") == 0) {  // mxu
      mxu_flops += a.at("flops").get<double>();
      if (mxu_ops.insert(e.at("name").get<std::string>()).second) mxu_op_flops += a.at("op_flops").get<double>();
    }
  }
  // One named process per TensorCore of the v2-8 (4 chips x 2 cores), each with every unit and
  // the track of its waits on the board's ICI links (issue 32).
  REQUIRE(process.size() == 8);
  CHECK(process.at(0).find("tpu_v2 core 0 (chip 0)") != std::string::npos);
  CHECK(process.at(7).find("core 7 (chip 3)") != std::string::npos);
  for (int core = 0; core < 8; ++core) {
    CHECK(tracks[core] == std::set<std::string>{"mxu", "vector", "hbm_read", "hbm_write", "ici", "infeed", "ici_wait"});
    CHECK(complete[core] == complete[0]);
  }
  CHECK(complete[0] > 10);
  // The measured step's events end when the step does.
  CHECK(last_end_us == Approx(rep.step_time_s * 1e6).epsilon(1e-6));
  // Bytes per event add up to the step's HBM traffic; the chunks of each MXU op to its FLOPs.
  CHECK(hbm_bytes == Approx(rep.extra.at("hbm_bytes_per_step").get<double>()).epsilon(1e-9));
  CHECK(mxu_flops > 0);
  CHECK(mxu_flops == Approx(mxu_op_flops).epsilon(1e-9));
  std::filesystem::remove(path);
}

TEST_CASE("a waveform is refused after the process's first simulation, naming the field", "[tpu][engine]") {
  // SystemC declares traced signals before its one simulation starts; a later request must
  // fail, not write an empty file. Run one simulation first so the order is certain.
  predict(v2_8("mnist_mlp", 8, DataSource::synthetic));
  PredictRequest r = v2_8("mnist_mlp", 8, DataSource::synthetic);
  r.vcd_path = (std::filesystem::temp_directory_path() / "xpusim_second.vcd").string();
  try {
    predict(r);
    FAIL("a VCD after the first simulation should throw");
  } catch (const FieldError& e) {
    CHECK(e.field() == "vcd");
    CHECK(std::string(e.what()).find("first TPU simulation") != std::string::npos);
  }
}

TEST_CASE("engines without a timeline refuse waveforms, the analytical one writes an estimated trace", "[tpu][engine]") {
  PredictRequest r;
  r.model = "mnist_mlp";
  r.batch_per_device = 8;
  r.placement.device = "p100_sxm2";  // analytical
  // Since issue 36 the analytical engine writes its estimated per-op timeline (trace.hpp)...
  const std::string trace = (std::filesystem::temp_directory_path() / "xpusim_analytical_trace_unit.json").string();
  r.trace_path = trace;
  const StepReport traced = predict(r);
  REQUIRE(std::filesystem::exists(trace));
  CHECK(std::filesystem::file_size(trace) > 1000);
  std::filesystem::remove(trace);
  r.trace_path.clear();
  CHECK(predict(r).step_time_s == traced.step_time_s);  // the trace does not change the prediction
  // ...but has no units to record as a waveform.
  r.vcd_path = "never_written.vcd";
  CHECK_THROWS_MATCHES(predict(r), FieldError, Catch::Predicate<FieldError>([](const FieldError& e) { return e.field() == "vcd"; }));
  CHECK_FALSE(std::filesystem::exists("never_written.vcd"));
}

TEST_CASE("step time emerges from overlapping units", "[tpu][engine]") {
  StepReport r = predict(v2_8("resnet50_cifar10", 64, DataSource::synthetic));
  double sum = 0, most = 0;
  for (const char* u : {"mxu", "vector", "hbm_read", "hbm_write", "ici"}) {
    double b = r.extra.at(std::string("busy_s_") + u).get<double>();
    sum += b;
    most = std::max(most, b);
  }
  CHECK(r.step_time_s >= most);
  CHECK(r.step_time_s < sum);  // units overlap: not a closed-form sum of their times
}

TEST_CASE("the ICI all-reduce is simulated and can bound the step", "[tpu][engine]") {
  PredictRequest one = v2_8("resnet50_cifar10", 64, DataSource::synthetic);
  one.placement.count = 1;
  StepReport r1 = predict(one);
  CHECK(r1.extra.at("ici_bytes_per_step").get<double>() == 0.0);  // one core: nothing to reduce
  PredictRequest slow = v2_8("resnet50_cifar10", 64, DataSource::synthetic);
  slow.placement.overrides = {"ici_link_bandwidth_gbps=0.05"};
  StepReport rs = predict(slow);
  CHECK(rs.bottleneck == Resource::ici);
  CHECK(rs.throughput_samples_per_s < 8 * r1.throughput_samples_per_s * 0.5);
}

TEST_CASE("tpu_v3 is the same model with other specs", "[tpu][engine]") {
  PredictRequest v3 = v2_8("resnet50", 128, DataSource::synthetic, "cloud_tpu_v3-8");
  v3.placement.device = "tpu_v3";
  StepReport r3 = predict(v3);
  StepReport r2 = predict(v2_8("resnet50", 128, DataSource::synthetic));
  CHECK(r3.device == "tpu_v3");
  CHECK(r3.memory_capacity_bytes == 2 * r2.memory_capacity_bytes);
  CHECK(r3.throughput_samples_per_s > 1.3 * r2.throughput_samples_per_s);
}
