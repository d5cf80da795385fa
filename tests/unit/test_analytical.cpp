// The analytical engine: hand-derived roofline, collective and memory numbers on toy inputs,
// flag errors, CPU thread scaling, host detection parsing, and the MAPE against the
// published reference rows (tests/data/reference/published_calibration.csv).
#include <catch2/catch.hpp>

#include <map>

#include <cmath>

#include "common/error.hpp"
#include "devices/analytical/device_spec.hpp"
#include "devices/analytical/host_detect.hpp"
#include "devices/analytical/op_cost.hpp"
#include "devices/analytical/rates.hpp"
#include "models/builder.hpp"
#include "models/work.hpp"
#include "predict/explain.hpp"
#include "predict/predict.hpp"
#include "tests/unit/predict_request.hpp"
#include "validation/reference_csv.hpp"
#include "validation/validate.hpp"
#include "xpusim_test_paths.hpp"

using namespace xpusim;
using namespace xpusim::analytical;

namespace {
// x[1024, 1024] -> dense 1024 -> 1024 (no bias): one MatMul with M = N = K = 1024.
struct OneMatMul {
  OpGraph g;
  int op = -1;
  OneMatMul() {
    ModelBuilder b(g, 1024, Precision::fp32);
    int x = b.flatten(b.image_input(1024, 1, 1), "flat");
    b.dense(x, 1024, false, "fc");
    op = g.num_ops() - 1;
    count_all_work(g);
  }
};

// The train_throughput rows of a reference CSV whose device the analytical engine models.
std::vector<validation::ReferenceRow> analytical_throughput_rows(const std::string& csv) {
  std::vector<validation::ReferenceRow> out;
  for (const auto& r : validation::read_reference_csv(csv)) {
    if (r.metric != "train_throughput") continue;
    try {
      if (engine_for_device(r.device) == "analytical") out.push_back(r);
    } catch (const UserError&) {
    }
  }
  return out;
}

StepReport run(const std::string& device, const std::string& model, int64_t batch, int count = 1,
               const std::string& precision = "fp32", std::vector<std::string> overrides = {}, const std::string& build = "",
               DataSource data = DataSource::synthetic) {
  PredictRequest r = fixtures::predict_request(device, count, model, batch, precision);
  r.data = data;
  r.placement.overrides = std::move(overrides);
  if (!build.empty()) {
    CpuBuild b;
    REQUIRE(parse_cpu_build(build, b));
    r.placement.build = b;
  }
  return predict(r);
}
}  // namespace

TEST_CASE("a single matmul on a toy device follows the roofline by hand", "[analytical]") {
  OneMatMul t;
  const OpNode& n = t.g.op(t.op);
  REQUIRE(n.kind == OpKind::MatMul);
  REQUIRE(n.work.flops == 2.0 * 1024 * 1024 * 1024);  // 2 M N K
  Rates r;
  r.gemm_flops_s = 1e12;    // 1 TFLOP/s effective
  r.memory_bytes_s = 1e11;  // 100 GB/s
  r.op_overhead_s = 5e-6;
  OpCost c = OpCostModel(r).visit(t.g, t.op);
  // compute 2^31 / 1e12 = 2.147483648 ms > memory (<= 12 MiB / 100 GB/s = 0.126 ms)
  CHECK(c.compute_s == Approx(2.147483648e-3));
  CHECK(c.memory_s < c.compute_s);
  CHECK(c.time_s() == Approx(2.147483648e-3 + 5e-6));
  // Tensor cores at 4 TFLOP/s effective: a quarter of the compute time.
  r.tensor_flops_s = 4e12;
  CHECK(OpCostModel(r).visit(t.g, t.op).compute_s == Approx(2.147483648e-3 / 4));
  // A device that needs twice as many outputs (2 * 1024 * 1024) to fill: half the rate.
  r.tensor_flops_s = 0;
  r.fill_items = 2.0 * 1024 * 1024;
  CHECK(OpCostModel(r).visit(t.g, t.op).compute_s == Approx(2 * 2.147483648e-3));
  // A slow memory makes it memory-bound: bytes / bandwidth.
  r.fill_items = 0;
  r.memory_bytes_s = 1e9;
  OpCost m = OpCostModel(r).visit(t.g, t.op);
  CHECK(m.memory_s == Approx(static_cast<double>(n.work.bytes_read + n.work.bytes_written) / 1e9));
  CHECK(m.time_s() == Approx(m.memory_s + 5e-6));
}

TEST_CASE("output channels round up to whole GEMM tiles", "[analytical]") {
  // dense 1024 -> N outputs at batch 1024: M = K = 1024; compute-bound on a fast memory.
  auto compute_s = [](int64_t n_out, double tile) {
    OpGraph g;
    ModelBuilder b(g, 1024, Precision::fp32);
    b.dense(b.flatten(b.image_input(1024, 1, 1), "flat"), n_out, false, "fc");
    count_all_work(g);
    Rates r;
    r.gemm_flops_s = 1e12;
    r.memory_bytes_s = 1e15;
    r.gemm_tile_n = tile;
    return OpCostModel(r).visit(g, g.num_ops() - 1).compute_s;
  };
  const double flop_s_128 = 2.0 * 1024 * 1024 * 128 / 1e12;
  CHECK(compute_s(128, 128) == Approx(flop_s_128));
  CHECK(compute_s(256, 128) == Approx(2 * flop_s_128));
  // 96 channels occupy one whole 128-wide tile: the time of 128 channels, not 96/128 of it.
  CHECK(compute_s(96, 128) == Approx(flop_s_128));
  // 192 channels take two tiles, the time of 256.
  CHECK(compute_s(192, 128) == Approx(2 * flop_s_128));
  // Without a tile the time is proportional to the channels.
  CHECK(compute_s(96, 0) == Approx(0.75 * flop_s_128));
}

TEST_CASE("an LSTM pays one dispatch plus a per-timestep cost; transcendentals cost FLOP slots", "[analytical]") {
  // lstm_textgen: one LSTM over 40 timesteps (forward 2 and backward 3 kernels per step).
  const std::vector<std::string> base{"op_overhead_us=0", "step_overhead_ms=0"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> o = base;
    o.insert(o.end(), extra.begin(), extra.end());
    return run("p100_sxm2", "lstm_textgen", 128, 1, "fp32", o).step_time_s;
  };
  const double t0 = with({"recurrent_step_overhead_us=0"});
  CHECK(with({"recurrent_step_overhead_us=100"}) - t0 == Approx((2 + 3) * 40 * 100e-6).epsilon(1e-6));
  // Without the key the per-timestep cost is the per-op overhead (every timestep a framework op).
  CHECK(run("p100_sxm2", "lstm_textgen", 128, 1, "fp32", {"op_overhead_us=50", "step_overhead_ms=0"}).step_time_s >
        with({"recurrent_step_overhead_us=45"}));
  // Dearer transcendentals only slow the step (sigmoid/tanh in the LSTM and the loss).
  CHECK(with({"recurrent_step_overhead_us=0", "transcendental_flops=40"}) > t0);
}

TEST_CASE("memory: the OOM boundary sits exactly at the estimated bytes", "[analytical][memory]") {
  StepReport a = run("rtx_2080ti", "wrn28_10", 128);
  REQUIRE(a.memory_bytes > 0);
  const double gb = static_cast<double>(a.memory_bytes) / 1e9;
  CHECK(run("rtx_2080ti", "wrn28_10", 128, 1, "fp32", {"memory_gb=" + std::to_string(gb * 1.001)}).fits_in_memory);
  CHECK_FALSE(run("rtx_2080ti", "wrn28_10", 128, 1, "fp32", {"memory_gb=" + std::to_string(gb * 0.999)}).fits_in_memory);
  // Activations grow with the batch: the 11 GB card holds batch 128 but not 1024 (the
  // 2080 Ti vs TPU study's OOM at large batches).
  CHECK(a.fits_in_memory);
  StepReport big = run("rtx_2080ti", "wrn28_10", 1024);
  CHECK_FALSE(big.fits_in_memory);
  CHECK(big.memory_bytes > a.memory_bytes);
}

TEST_CASE("bad placements are UserErrors naming the flag", "[analytical][errors]") {
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(message([] { run("no_such_gpu", "resnet50", 32); }), Catch::StartsWith("device: "));
  CHECK_THAT(message([] { run("p100_sxm2", "resnet50", 32, 9); }), Catch::StartsWith("count: "));
  CHECK_THAT(message([] { run("k80", "resnet50", 32, 1, "mixed_fp16"); }), Catch::StartsWith("precision: "));
  CHECK_THAT(message([] { run("p100_sxm2", "resnet50", 32, 1, "fp32", {}, "pip"); }), Catch::StartsWith("build: "));
  CHECK_THAT(message([] { run("gce_skylake_vcpu", "mnist_mlp", 128, 200); }), Catch::StartsWith("count: "));
  CHECK_THAT(message([] { run("p100_sxm2", "resnet50", 32, 1, "fp32", {"compute_efficiency=2"}); }),
             // Issue 16: the value came from --set, so the --set is named, not line 1 of the file.
             Catch::StartsWith("set: compute_efficiency=2: compute_efficiency: must be in (0, 1]"));
  CHECK_THAT(message([] { run("p100_sxm2", "resnet50", 32, 1, "fp32", {"compute_eficiency=0.5"}); }),
             Catch::Contains("compute_eficiency"));
  PredictRequest r;
  r.model = "resnet50";
  r.placement.device = "p100_sxm2";
  r.placement.system = "gce_n1_highcpu";
  CHECK_THAT(message([&] { predict(r); }), Catch::StartsWith("system: "));
}

TEST_CASE("every device YAML loads and its calibrate keys are real numeric fields", "[analytical][spec]") {
  for (const char* d : {"k80", "p100_sxm2", "v100_sxm2_16gb", "v100_sxm2_32gb", "titan_v", "titan_rtx", "rtx_2080ti",
                        "gtx_1080ti", "a100_sxm4_40gb", "h100_sxm5", "h200", "b200", "gb200", "gce_skylake_vcpu",
                        "host"}) {
    DeviceSpec s = load_device_spec(d);
    CHECK(s.name == d);
    CHECK(!s.calibrate.empty());
    CHECK(s.calibrate.size() <= 4);
    for (const auto& k : s.calibrate) {  // each key is a validated numeric field of the reader
      bool accepted = false;
      for (const char* v : {"0.5", "1", "2"}) {
        try {
          load_device_spec(d, {k + "=" + v});
          accepted = true;
          break;
        } catch (const UserError&) {
        }
      }
      CHECK(accepted);
      CHECK_THROWS_AS(load_device_spec(d, {k + "=not_a_number"}), UserError);
    }
  }
}

TEST_CASE("CPU devices: vCPUs are not replicas; 32 and 64 vCPUs perform alike; compiled beats pip", "[analytical][cpu]") {
  Placement p;
  p.device = "gce_skylake_vcpu";
  p.count = 32;
  CHECK(resolve_placement(p, cached_engine("analytical")).replicas == 1);
  p.device = "p100_sxm2";
  p.count = 4;
  CHECK(resolve_placement(p, cached_engine("analytical")).replicas == 4);
  const double t8 = run("gce_skylake_vcpu", "cifar10_cnn", 32, 8).throughput_samples_per_s;
  const double t32 = run("gce_skylake_vcpu", "cifar10_cnn", 32, 32).throughput_samples_per_s;
  const double t64 = run("gce_skylake_vcpu", "cifar10_cnn", 32, 64).throughput_samples_per_s;
  CHECK(t32 > 1.5 * t8);
  CHECK(t64 / t32 == Approx(1.0).margin(0.25));
  const double pip = run("gce_skylake_vcpu", "cifar10_cnn", 32, 16, "fp32", {}, "pip").throughput_samples_per_s;
  const double comp = run("gce_skylake_vcpu", "cifar10_cnn", 32, 16, "fp32", {}, "compiled").throughput_samples_per_s;
  // The cloud-CPU study: the compiled build is 30-40% faster.
  CHECK(comp > 1.1 * pip);
  CHECK(comp < 2.0 * pip);
}

TEST_CASE("predict --explain prices a CPU in the build the request resolves to", "[analytical][cpu]") {
  // The per-op prices must be those of the step they explain: the build asked for (--build), or
  // the framework name's -pip/-compiled suffix, not always the device's default (the pip wheel).
  auto conv_s = [](const PredictRequest& r) {
    double s = 0;
    for (const auto& e : explain_request(r))
      if (e.kind == "conv2d") s += e.time_s;
    return s;
  };
  PredictRequest r = fixtures::predict_request("gce_skylake_vcpu", 16, "cifar10_cnn", 32);
  const double by_default = conv_s(r);
  r.placement.build = CpuBuild::compiled;
  const double compiled = conv_s(r);
  r.placement.build = CpuBuild::pip;
  CHECK(conv_s(r) == Approx(by_default));  // the device's default build is pip
  // AVX2+FMA against SSE: the compiled build's convolutions are cheaper.
  CHECK(compiled < 0.9 * by_default);
  r.placement.build.reset();
  r.placement.framework = "keras-tf1.2-compiled";
  CHECK(conv_s(r) == Approx(compiled));
}

TEST_CASE("predict --explain prices each op as the step does, NCHW transposes included", "[analytical]") {
  // pytorch_ngc_2019 keeps activations NCHW (conv_layout: nchw): its tensor-core convolutions
  // pay the layout transposes in the step, so the per-op prices must carry them too.
  PredictRequest r = fixtures::predict_request("v100_sxm2_16gb", 1, "resnet50", 64, "mixed_fp16");
  r.placement.framework = "pytorch_ngc_2019";
  double explained = 0;
  for (const auto& e : explain_request(r))
    if (e.kind == "conv2d") explained += e.time_s;
  const StepReport rep = predict(r);
  REQUIRE(rep.per_op_s.count("conv2d") == 1);
  CHECK(explained == Approx(rep.per_op_s.at("conv2d")).epsilon(1e-9));
}

TEST_CASE("CPU thread scaling: Amdahl over first-socket cores plus discounted second-socket cores", "[analytical][cpu]") {
  DeviceSpec d;
  d.kind = DeviceKind::cpu;
  d.vcpus_per_core = 2;
  d.vcpus_per_socket = 16;  // 8 cores per socket
  d.numa_efficiency = 0.5;
  d.serial_fraction = 0.1;
  CHECK(cpu_effective_cores(d, 8) == Approx(4));
  CHECK(cpu_effective_cores(d, 32) == Approx(8 + 0.5 * 8));
  // 1 / (0.1 + 0.9 / 4) = 3.0769...
  CHECK(cpu_speedup(d, 8) == Approx(1.0 / (0.1 + 0.9 / 4)));
}

TEST_CASE("host detection parses /proc/cpuinfo", "[analytical][host]") {
  std::string text;
  for (int s = 0; s < 2; ++s)
    for (int c = 0; c < 4; ++c)
      for (int h = 0; h < 2; ++h)
        text += "processor\t: " + std::to_string(s * 8 + c * 2 + h) + "\nphysical id\t: " + std::to_string(s) +
                "\ncore id\t\t: " + std::to_string(c) + "\ncpu MHz\t\t: 2500.000\nflags\t\t: fpu sse sse2 avx avx2 fma\n\n";
  HostCpuInfo h = parse_cpuinfo(text);
  CHECK(h.logical_cpus == 16);
  CHECK(h.physical_cores == 8);
  CHECK(h.sockets == 2);
  CHECK(h.max_ghz == Approx(2.5));
  CHECK(h.avx2);
  CHECK(h.fma);
  CHECK_FALSE(h.avx512f);
  // The live machine yields at least one core and a usable host device.
  CHECK(detect_host_cpu().logical_cpus >= 1);
  CHECK(run("host", "mnist_mlp", 128, 1).throughput_samples_per_s > 0);
  // sysfs cache sizes
  CHECK(parse_cache_size("32768K\n") == 32768LL * 1024);
  CHECK(parse_cache_size("1M") == 1024 * 1024);
  CHECK(parse_cache_size("512") == 512);
  CHECK(parse_cache_size("lots") == 0);
}

TEST_CASE("CPU ops whose bytes fit in the last-level cache stream from it", "[analytical][cpu]") {
  // mnist_mlp's optimizer updates move a few MB each: from DRAM at 20 GB/s without a cache
  // model, at 32 B/cycle/core from a 64 MB cache; a 1 MB cache holds none of the big ones.
  auto update_s = [](const std::string& llc) {
    auto r = run("gce_skylake_vcpu", "mnist_mlp", 128, 8, "fp32", {llc});
    return r.per_op_s.at("sgd_momentum_update");
  };
  const double dram = update_s("llc_mb=0"), big = update_s("llc_mb=64"), tiny = update_s("llc_mb=0.001");
  CHECK(big < 0.5 * dram);
  CHECK(tiny == Approx(dram).epsilon(1e-3));  // only the 10-element bias update fits in 1 kB
}

TEST_CASE("predictions are deterministic and real data can only slow a step", "[analytical]") {
  StepReport a = run("p100_sxm2", "resnet50", 64, 8);
  StepReport b = run("p100_sxm2", "resnet50", 64, 8);
  CHECK(a.to_json().dump() == b.to_json().dump());
  StepReport real = run("p100_sxm2", "alexnet", 512, 8, "fp32", {}, "", DataSource::real);
  StepReport syn = run("p100_sxm2", "alexnet", 512, 8);
  CHECK(real.step_time_s >= syn.step_time_s);
  // Tensor cores speed up V100 under mixed precision.
  CHECK(run("v100_sxm2_16gb", "resnet50", 128, 1, "mixed_fp16").throughput_samples_per_s >
        1.5 * run("v100_sxm2_16gb", "resnet50", 128, 1, "fp32").throughput_samples_per_s);
}

TEST_CASE("host model vs the CPU backend's measured rows stays at the calibrated level", "[analytical][reference]") {
  // validation/measured/cpu-host-t1-check-2026-11-21.csv: 7 models measured on this
  // project's build VM type after host.yaml was calibrated (never fitted). The VM's detected
  // figures are pinned, so the test gives the same answer on any machine.
  auto rows = analytical_throughput_rows(std::string(XPUSIM_MEASURED_DIR) + "/cpu-host-t1-check-2026-11-21.csv");
  REQUIRE(rows.size() == 7);
  const std::vector<std::string> vm{"detect=false",          "frequency_ghz=2.445",        "vcpus_per_core=1",
                                    "vcpus_per_socket=2",    "max_vcpus=2",                "memory_gb=24",
                                    "compiled_simd_fp32_lanes=8", "compiled_fma_units=2", "llc_mb=33.554432"};
  validation::ValidateOptions o;
  o.overrides["host"] = vm;
  auto res = validation::validate_rows(rows, o);
  REQUIRE(res.rows_used == 7);
  for (const auto& r : res.rows) {
    INFO(r.row.model << ": " << r.error_pct.value_or(1e9) << "%");
    CHECK(std::abs(r.error_pct.value_or(1e9)) <= 15.0);  // the target, per model
  }
  REQUIRE(res.mape_pct.has_value());
  CHECK(*res.mape_pct <= 8.0);
}

TEST_CASE("monitoring readings measured on an H200 and an H100 (held out) stay at their level",
          "[analytical][reference][monitoring]") {
  // validation/measured/h{200,100}-monitor-2026-11-27.csv: PyTorch 2.11 eager training steps on
  // lent GPUs with nvidia-smi sampled every 100 ms (bench/gpu_monitor.py). Never fitted on: the
  // levels are what the model gave when the files were taken (issue 31), so a change that moves
  // the monitoring model away from a real GPU's readings fails here.
  struct Case {
    const char* file;
    size_t rows;
    double power_mape, smi_mape;  // when taken: H200 8.4 / 20.6 %, H100 11.7 / 19.1 %
  };
  for (const Case& c : {Case{"h200-monitor-2026-11-27.csv", 30, 10.0, 22.0},
                        Case{"h100-monitor-2026-11-27.csv", 35, 13.0, 21.0}}) {
    INFO(c.file);
    auto rows = validation::read_reference_csv(std::string(XPUSIM_MEASURED_DIR) + "/" + c.file);
    REQUIRE(rows.size() == c.rows);
    auto res = validation::validate_rows(rows, validation::ValidateOptions{});
    REQUIRE(res.rows_used == static_cast<int>(c.rows));  // every GPU row reports all four readings
    std::map<std::string, std::vector<double>> errs;
    for (const auto& r : res.rows) errs[r.row.metric].push_back(*r.error_pct);
    auto mape = [&](const std::string& m) { return *validation::mape_pct(errs.at(m)); };
    INFO("gpu_power_w " << mape("gpu_power_w") << "%, gpu_util_pct_smi " << mape("gpu_util_pct_smi") << "%");
    CHECK(mape("gpu_power_w") <= c.power_mape);
    CHECK(mape("gpu_util_pct_smi") <= c.smi_mape);  // the calibration stack's per-op gaps
    // The model never reads more than the tool can show.
    for (const auto& r : res.rows)
      if (r.row.metric == "gpu_util_pct_smi") CHECK(*r.predicted <= 100.0);
  }
}

TEST_CASE("MAPE against every published train_throughput row stays at the calibrated level", "[analytical][reference]") {
  // One set of constants per device (configs/devices/*.yaml), no per-model constants. The
  // levels are what the calibration reached (docs/analytical-model.md), with a little slack.
  auto rows = analytical_throughput_rows(std::string(XPUSIM_TEST_DATA_DIR) + "/reference/published_calibration.csv");
  REQUIRE(rows.size() == 134);  // 71 P100 DGX-1, 56 GCE K80, 3 V100 (TF, MXNet) and 4 V100 PyTorch rows
  auto res = validation::validate_rows(rows, {});
  REQUIRE(res.rows_used == 134);
  std::map<std::string, double> mape;
  for (const auto& g : res.by_device) mape[g.key] = g.mape_pct;
  INFO("MAPE all " << *res.mape_pct << " p100 " << mape["p100_sxm2"] << " k80 " << mape["k80"] << " v100 "
                   << mape["v100_sxm2_16gb"]);
  CHECK(mape["p100_sxm2"] <= 6.0);
  CHECK(mape["k80"] <= 5.0);
  CHECK(mape["v100_sxm2_16gb"] <= 7.0);
  CHECK(*res.mape_pct <= 5.5);  // the calibrated level (docs/analytical-model.md); the issue asked for 10
}

TEST_CASE("MAPE against the modern published rows stays at its level, no row skipped", "[analytical][reference]") {
  // Issue 29's 734 rows (DeepLearningExamples, Lambda): constants per architecture generation
  // and stack only. The levels are what this build reaches (docs/gpu_model.md), with slack.
  auto rows = analytical_throughput_rows(std::string(XPUSIM_TEST_DATA_DIR) + "/reference/modern_calibration.csv");
  REQUIRE(rows.size() == 734);
  // 68 BERT pre-training rows state their gradient accumulation in their own note
  // ("micro-batch derived = A/B"): predicted with their micro-batches per optimizer step.
  int with_global_batch = 0;
  for (const auto& r : rows) with_global_batch += r.step_global_batch() ? 1 : 0;
  CHECK(with_global_batch == 68);
  auto res = validation::validate_rows(rows, {});
  REQUIRE(res.rows_used == 734);
  std::map<std::string, double> mape;
  for (const auto& g : res.by_device) mape[g.key] = g.mape_pct;
  INFO("MAPE all " << *res.mape_pct << " rtx_3090 " << mape["rtx_3090"] << " rtx_a6000 " << mape["rtx_a6000"]
                   << " quadro_rtx_8000 " << mape["quadro_rtx_8000"] << " v100_sxm3_32gb " << mape["v100_sxm3_32gb"]);
  // 8 RTX 3090s without PCIe peer-to-peer share the host's staging bandwidth: 36% before.
  // 11.4%: 15.7% before the workstation GA102's sustained clock under its power limit let the
  // GA10x refit raise the tensor efficiency (29x: 12.8%), then 29z's calibrate --system refit of
  // the staging rate (15.3 -> 17.5 GB/s; 15.5% before 29s, +0.9 with 31c's Winograd).
  CHECK(mape["rtx_3090"] <= 11.9);
  // 12.4% (15.0% before 29x: the A6000's 2.18x tensor peak over the 3090's ran at the boost clock).
  CHECK(mape["rtx_a6000"] <= 12.9);
  CHECK(mape["rtx_3080"] <= 8.4);          // 7.9% (10.0% before 29x; 17.4% before cuDNN's Winograd choice)
  CHECK(mape["quadro_rtx_8000"] <= 10.3);  // 9.8% (11.5% before 29x: mixed rows +16% at the boost clock)
  CHECK(mape["rtx_2080ti"] <= 9.0);        // 8.5% (9.3% before 29x)
  // 8.6% (9.06% before its two 2019-05 DGX-2 PyTorch rows took the required NGC 19.05 as their
  // version; 9.74% before NGC TF's fused BN + ReLU and host input cost, 29y; 10.9% before its
  // peaks at 1597 MHz, 29v).
  CHECK(mape["v100_sxm3_32gb"] <= 9.1);
  CHECK(mape["a100_sxm4_40gb"] <= 5.8);  // 5.26% (9.41% before 29y's NGC TF refit with the TF32 factor and 29w's releases)
  // NGC releases told apart (29w): PyTorch 20.06 NCHW (pytorch_ngc_2020), 20.12+ and MXNet
  // channels-last AMP only (conv_layout_fp32), MXNet 22.x (ngc_mxnet_2022): A100 80 GB 17.9% ->
  // 13.8%, V100 SXM2 32 GB 13.5% -> 12.3%.
  CHECK(mape["a100_sxm4_80gb"] <= 14.3);
  CHECK(mape["v100_sxm2_32gb"] <= 12.8);
  // 9.94% (10.01% before the DGX-2 RN50 rows of 2019-05 took the NGC container their README
  // requires, 19.05, as their stack version; 11.66% before 29w, 29x, 29y and 29z's refit of the
  // PCIe servers' fabric; 12.68% before 29s, 29v and 31c; 15.10% two sessions back). The
  // issue's target is 10%.
  CHECK(*res.mape_pct <= 10.0);
}
