// The host/framework pass (predict/host_pass.hpp) on hand-built device steps: the input
// pipeline's time, the step under each HostCoupling, the framework's overheads, global batch
// and throughput, with numbers derived by hand.
#include <catch2/catch.hpp>

#include <memory>

#include "predict/host_pass.hpp"

using namespace xpusim;

namespace {
struct Fixture {
  std::shared_ptr<FrameworkSpec> fw = std::make_shared<FrameworkSpec>();
  std::shared_ptr<SystemSpec> sys = std::make_shared<SystemSpec>();
  std::shared_ptr<DatasetSpec> ds = std::make_shared<DatasetSpec>();
  OpGraph g;
  StepRequest req;
  Fixture() {
    g.batch = 64;
    ds->host_preprocess_ms = 2;
    sys->host.cpu_cores = 8;
    sys->host.core_speed = 2;
    sys->host.step_overhead_ms = 5;
    req.graph = &g;
    req.data = DataSource::real;
    req.placement.count = 4;
    req.placement.replicas = 4;
    req.placement.input_feed = InputFeed{8, 2, 4, 1, 0.0, ""};
  }
  // The placement holds const specs: set them after the fields are final.
  StepRequest& request() {
    req.placement.framework = fw;
    req.placement.system = sys;
    req.placement.dataset = ds;
    return req;
  }
};
}  // namespace

TEST_CASE("host pass: the input pipeline's time per step", "[host_pass]") {
  Fixture f;
  f.fw->input_cost_scale = 1.5;
  // 64 samples x 4 devices x 2 ms x 1.5 on 8 cores of speed 2: 768 ms / 16 = 48 ms.
  CHECK(host_batch_s(f.request(), f.g) == Approx(0.048));
  // Two framework threads: 768 ms / (2 x 2) = 192 ms.
  f.fw->input_threads = 2;
  CHECK(host_batch_s(f.request(), f.g) == Approx(0.192));
  // Synthetic data: no pipeline.
  f.req.data = DataSource::synthetic;
  CHECK(host_batch_s(f.request(), f.g) == 0);
}

TEST_CASE("host pass: input workers per device scale with the devices fed, capped at the cores", "[host_pass]") {
  Fixture f;
  // One DataLoader worker per device, 4 devices fed: 64 x 4 x 2 ms = 512 ms on 4 threads of
  // speed 2 -> 64 ms.
  f.fw->input_workers_per_device = 1;
  CHECK(host_batch_s(f.request(), f.g) == Approx(0.064));
  CHECK(input_pipeline_threads(*f.fw, f.req.placement.input_feed) == Approx(4));
  // Three per device = 12 workers on 8 cores: every core, 512 ms / 16 = 32 ms.
  f.fw->input_workers_per_device = 3;
  CHECK(host_batch_s(f.request(), f.g) == Approx(0.032));
  CHECK(input_pipeline_threads(*f.fw, f.req.placement.input_feed) == Approx(8));
}

TEST_CASE("host pass: DataLoader workers on SMT hosts, a DGX-1 against a DGX A100", "[host_pass]") {
  Fixture f;
  // ResNet-50 at 256 images per GPU, 8 ms per image on a core of its own (input_cost_scale 1),
  // cores of speed 1; DeepLearningExamples' launcher: 8 workers per GPU on a DGX-1, 16 on a DGX A100.
  f.g.batch = 256;
  f.ds->host_preprocess_ms = 8;
  f.fw->input_workers_per_device = 8;
  f.fw->input_workers_per_device_by_system = {{"dgx_a100", 16}};
  // DGX-1: 80 hardware threads on 40 cores; a core's second thread adds 0.3 of a core.
  auto dgx1 = [](int devices) { return InputFeed{80, 1, devices, 2, 0.3, "dgx1v_nvlink"}; };
  // One GPU: 8 workers on 8 cores of their own: 256 x 8 ms / 8 = 256 ms (1,000 images/s).
  f.req.placement.input_feed = dgx1(1);
  CHECK(input_pipeline_threads(*f.fw, f.req.placement.input_feed) == Approx(8));
  CHECK(host_batch_s(f.request(), f.g) == Approx(0.256));
  // Eight GPUs: 64 workers, 40 on cores of their own and 24 sharing one at 0.3 each: 47.2
  // cores; 2,048 x 8 ms / 47.2 = 347.1 ms (5,900 images/s), not 64 threads' 8,000.
  f.req.placement.input_feed = dgx1(8);
  CHECK(input_pipeline_threads(*f.fw, f.req.placement.input_feed) == Approx(47.2));
  CHECK(host_batch_s(f.request(), f.g) == Approx(2048 * 8e-3 / 47.2));
  CHECK(2048 / host_batch_s(f.request(), f.g) == Approx(5900));
  // A stated 80 threads fill both threads of every core: 40 x 1.3 = 52 cores' work.
  f.fw->input_workers_per_device = 0;
  f.fw->input_workers_per_device_by_system.clear();
  f.fw->input_threads = 80;
  CHECK(input_pipeline_threads(*f.fw, f.req.placement.input_feed) == Approx(52));
  // A pipeline on every core (tf.data, input_threads 0) keeps the host's 80 in the datasets'
  // unit (per hardware thread of a fully loaded host): 2,048 x 8 ms / 80 = 204.8 ms, as before.
  f.fw->input_threads = 0;
  CHECK(input_pipeline_threads(*f.fw, f.req.placement.input_feed) == 0);
  CHECK(host_batch_s(f.request(), f.g) == Approx(0.2048));
  // DGX A100: 256 hardware threads on 128 cores; 16 workers x 8 GPUs = 128, a core each:
  // 2,048 x 8 ms / 128 = 128 ms (16,000 images/s), 2.7x the DGX-1's 8-worker rate.
  f.fw->input_workers_per_device = 8;
  f.fw->input_workers_per_device_by_system = {{"dgx_a100", 16}};
  f.req.placement.input_feed = InputFeed{256, 1, 8, 2, 0.3, "dgx_a100"};
  CHECK(input_pipeline_threads(*f.fw, f.req.placement.input_feed) == Approx(128));
  CHECK(host_batch_s(f.request(), f.g) == Approx(0.128));
  // Another system takes input_workers_per_device: 8 x 8 = 64 workers on the same host's cores.
  f.req.placement.input_feed = InputFeed{256, 1, 8, 2, 0.3, "server_sxm"};
  CHECK(input_pipeline_threads(*f.fw, f.req.placement.input_feed) == Approx(64));
  // Without SMT the DGX-1's 64 workers are 64 threads: 2,048 x 8 ms / 64 = 256 ms.
  f.req.placement.input_feed = InputFeed{80, 1, 8, 1, 0.3, "dgx1v_nvlink"};
  CHECK(input_pipeline_threads(*f.fw, f.req.placement.input_feed) == Approx(64));
  CHECK(host_batch_s(f.request(), f.g) == Approx(0.256));
}

TEST_CASE("host pass: per-op host dispatch bounds a GPU step and adds to a CPU step", "[host_pass]") {
  Fixture f;
  for (int i = 0; i < 1000; ++i) f.g.add_op(OpNode{});
  f.fw->name = "eager";
  f.fw->host_dispatch_us_per_op = 200;  // 1000 ops x 200 us = 0.2 s on the host thread
  f.req.data = DataSource::synthetic;
  StepRequest& req = f.request();
  CHECK(host_dispatch_s(req, f.g) == Approx(0.2));
  StepReport gpu;
  gpu.device_step.coupling = HostCoupling::prefetched;
  gpu.device_step.device_s = 0.1;
  gpu.device_step.device_overhead_s = 0.01;
  gpu.device_step.infeed_s = 0.02;
  gpu.device_step.shares = {{Resource::compute, 0.1}};
  gpu.device_step.busy_s[Resource::compute] = 0.1;
  apply_host_pass(req, f.g, gpu);
  // Device 0.1 + 0.01 + 5 ms host = 0.115 s runs under the 0.2 s of dispatch: the step is 0.2 s.
  CHECK(gpu.step_time_s == Approx(0.2));
  CHECK(gpu.bottleneck == Resource::overhead);
  CHECK(gpu.utilization[Resource::compute] == Approx(0.5));
  CHECK(gpu.extra["host_dispatch_s"].get<double>() == Approx(0.2));
  // Dispatch shorter than the device: hidden (0.05 s < 0.115 s).
  f.fw->host_dispatch_us_per_op = 50;
  StepReport hidden;
  hidden.device_step = gpu.device_step;
  apply_host_pass(f.request(), f.g, hidden);
  CHECK(hidden.step_time_s == Approx(0.115));
  CHECK(hidden.bottleneck == Resource::compute);
  // A CPU runs the ops on the dispatching thread: 0.1 + 5 ms + 0.05 s.
  StepReport cpu;
  cpu.device_step.coupling = HostCoupling::shared_cores;
  cpu.device_step.device_s = 0.1;
  apply_host_pass(f.request(), f.g, cpu);
  CHECK(cpu.step_time_s == Approx(0.155));
}

TEST_CASE("host pass: a prefetched step is bounded by the pipeline, then the framework adds its host work",
          "[host_pass]") {
  Fixture f;
  f.fw->name = "profile";
  f.fw->step_overhead_ms = 3;
  f.fw->device_step_overhead_ms = 1;
  StepRequest& req = f.request();
  req.host_batch_s = 0.2;
  StepReport rep;
  DeviceStep& d = rep.device_step;
  d.coupling = HostCoupling::prefetched;
  d.device_s = 0.1;
  d.device_overhead_s = 0.01;
  d.infeed_s = 0.02;
  d.shares = {{Resource::compute, 0.06}, {Resource::overhead, 0.001}};
  d.busy_s[Resource::compute] = 0.05;
  d.flops = 1e12;
  apply_host_pass(req, f.g, rep);
  // Device 0.1 + 0.01 + 5 ms host = 0.115 < pipeline 0.2; + 3 ms + 3 x 1 ms framework = 0.206 s.
  CHECK(rep.step_time_s == Approx(0.206));
  CHECK(rep.global_batch == 256);
  CHECK(rep.throughput_samples_per_s == Approx(256 / 0.206));
  CHECK(rep.bottleneck == Resource::input_pipeline);
  CHECK(rep.utilization[Resource::compute] == Approx(0.05 / 0.206));
  CHECK(rep.utilization[Resource::input_pipeline] == Approx(0.2 / 0.206));
  CHECK(rep.extra["achieved_flops_per_s"].get<double>() == Approx(1e12 / 0.206));
  CHECK(rep.extra["time_overhead_s"].get<double>() == Approx(0.001 + 0.015));
  CHECK(rep.extra["framework_step_overhead_s"].get<double>() == Approx(0.006));
  CHECK(rep.framework == "profile");
}

TEST_CASE("host pass: a device loader puts decode on the device; a CPU adds the pipeline", "[host_pass]") {
  Fixture f;
  f.fw->input_mode = InputMode::device_loader;
  f.fw->device_decode_us_per_sample = 100;
  StepRequest& req = f.request();
  req.host_batch_s = 0.2;
  StepReport gpu;
  gpu.device_step.coupling = HostCoupling::prefetched;
  gpu.device_step.device_s = 0.1;
  gpu.device_step.shares = {{Resource::compute, 0.1}};
  apply_host_pass(req, f.g, gpu);
  // 0.1 + 5 ms host + 64 x 100 us decode = 0.1114 s; no host bound.
  CHECK(gpu.step_time_s == Approx(0.1114));
  CHECK(gpu.bottleneck == Resource::compute);
  CHECK(gpu.framework.empty());  // the neutral profile is not named
  StepReport cpu;
  cpu.device_step.coupling = HostCoupling::shared_cores;
  cpu.device_step.device_s = 0.1;
  req.placement.replicas = 1;
  apply_host_pass(req, f.g, cpu);
  // The pipeline runs on the training cores: 0.105 + 0.2.
  CHECK(cpu.step_time_s == Approx(0.305));
  CHECK(cpu.global_batch == 64);
}

TEST_CASE("host pass: a device loader's decode time scales with the dataset's host cost when referenced",
          "[host_pass]") {
  Fixture f;
  f.fw->input_mode = InputMode::device_loader;
  f.fw->device_decode_us_per_sample = 100;
  // No reference: every sample costs 100 us, whatever the dataset: 64 x 100 us = 6.4 ms.
  CHECK(device_decode_s(f.request(), f.g) == Approx(0.0064));
  // Stated for a 8 ms sample; this dataset's sample costs the host 2 ms: 25 us each, 1.6 ms.
  f.fw->device_decode_reference_ms = 8;
  CHECK(device_decode_s(f.request(), f.g) == Approx(0.0016));
  StepRequest& req = f.request();
  StepReport gpu;
  gpu.device_step.coupling = HostCoupling::prefetched;
  gpu.device_step.device_s = 0.1;
  gpu.device_step.shares = {{Resource::compute, 0.1}};
  apply_host_pass(req, f.g, gpu);
  CHECK(gpu.step_time_s == Approx(0.1 + 0.005 + 0.0016));
  // Synthetic data and a host pipeline decode nothing on the device.
  f.req.data = DataSource::synthetic;
  CHECK(device_decode_s(f.request(), f.g) == 0);
  f.req.data = DataSource::real;
  f.fw->input_mode = InputMode::host_pipeline;
  CHECK(device_decode_s(f.request(), f.g) == 0);
}

TEST_CASE("host pass: simulated, measured and not-run device steps", "[host_pass]") {
  Fixture f;
  f.fw->name = "profile";
  f.fw->step_overhead_ms = 4;
  StepRequest& req = f.request();
  req.placement.replicas = 8;
  StepReport tpu;
  tpu.device_step.coupling = HostCoupling::simulated;
  tpu.device_step.device_s = 0.05;
  tpu.bottleneck = Resource::mxu;  // the engine's own
  apply_host_pass(req, f.g, tpu);
  CHECK(tpu.step_time_s == Approx(0.054));  // the host's step overhead is not the TPU's
  CHECK(tpu.global_batch == 512);
  CHECK(tpu.throughput_samples_per_s == Approx(512 / 0.054));
  CHECK(tpu.bottleneck == Resource::mxu);
  CHECK(tpu.extra["host_images_per_s"].get<double>() == Approx(8 * 2 / 2e-3));
  StepReport oom;
  oom.device_step.coupling = HostCoupling::simulated;
  oom.device_step.ran = false;
  apply_host_pass(req, f.g, oom);
  CHECK(oom.global_batch == 512);
  CHECK(oom.step_time_s == 0);
  CHECK(oom.throughput_samples_per_s == 0);
  CHECK(oom.framework.empty());
  StepReport real;
  real.device_step.device_s = 0.25;  // measured by default
  req.placement.replicas = 2;
  apply_host_pass(req, f.g, real);
  CHECK(real.step_time_s == 0.25);
  CHECK(real.throughput_samples_per_s == Approx(128 / 0.25));
  CHECK(real.framework.empty());
}
