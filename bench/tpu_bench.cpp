// Benchmarks of the TPU model (issue #3). Prints medians of repeated runs and ratios:
//  (a) wall time to predict one ResNet-50 training step on a v2-8 (bf16, 128 per core),
//      split into graph build + lowering + SystemC simulation, against the 1 s goal;
//  (b) SCALE-Sim-mode speed in simulated cycles per wall second on the ResNet-50 topology,
//      against the PE-level grid measured in this same run (a register-by-register
//      simulation) and against SCALE-Sim's published ~7,000 cycles/s (a published figure,
//      not measured here).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "models/zoo.hpp"
#include "predict/predict.hpp"
#include "sim/tpu/pe_grid.hpp"
#include "sim/tpu/scalesim.hpp"

using namespace xpusim;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class F>
double time_s(F&& f) {
  auto t0 = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int run(int argc, char** argv) {
  int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  // (a) one ResNet-50 v2-8 step.
  PredictRequest r;
  r.model = "resnet50";
  r.batch_per_device = 128;
  r.precision = "bf16";
  r.placement.device = "tpu_v2";
  r.placement.count = 8;
  r.placement.system = "cloud_tpu_v2-8";
  StepReport rep = predict(r);  // warm-up: elaborates the SystemC model
  std::vector<double> total, graph_only;
  for (int i = 0; i < reps; ++i) {
    total.push_back(time_s([&] { rep = predict(r); }));
    graph_only.push_back(time_s([&] {
      GraphOptions o;
      o.batch = 128;
      parse_precision("bf16", o.precision);
      o.training_options.replicas = 8;
      OpGraph g = build_graph(find_model("resnet50"), o);
    }));
  }
  double t = median(total), tg = median(graph_only);
  std::printf("(a) resnet50 v2-8 bf16 128/core: predicted %.1f img/s, step %.4f s simulated\n",
              rep.throughput_samples_per_s, rep.step_time_s);
  std::printf("    wall per prediction (median of %d): %.3f s = graph %.3f s + lowering/simulation %.3f s\n", reps, t,
              tg, t - tg);
  std::printf("    simulated steps per prediction: %d; wall per simulated step %.3f s; ratio to 1 s goal: %.3f\n",
              rep.extra.at("simulated_steps").get<int>(), (t - tg) / rep.extra.at("simulated_steps").get<int>(), t);

  // (b) SCALE-Sim mode on the ResNet-50 topology, 128x128 ws.
  std::string topo = config_dir() + "/topologies/resnet50.csv";
  auto layers = tpu::read_topology_csv(topo);
  long long cycles = 0;
  std::vector<double> ts;
  for (int i = 0; i < reps; ++i)
    ts.push_back(time_s([&] {
      long long c = 0;
      for (int k = 0; k < 100; ++k)
        for (const auto& l : layers) c += tpu::scalesim_layer(l, 128, 128, tpu::Dataflow::ws).cycles;
      cycles = c / 100;
    }) / 100);
  double ts_med = median(ts);
  double cps = static_cast<double>(cycles) / ts_med;
  // PE-level grid, measured here: a 32x32 array streaming 256 rows.
  std::vector<float> a(256 * 32, 0.5f), b(32 * 32, 0.25f);
  std::vector<double> tp;
  long long pe_cycles = 0;
  for (int i = 0; i < reps; ++i) tp.push_back(time_s([&] { pe_cycles = tpu::pe_grid_gemm(a, b, 256, 32, 32, 32, 32).cycles; }));
  double pe_cps = static_cast<double>(pe_cycles) / median(tp);
  std::printf("(b) SCALE-Sim mode, resnet50 topology (%zu layers), 128x128 ws: %lld cycles in %.2e s (median)\n",
              layers.size(), cycles, ts_med);
  std::printf("    %.3e simulated cycles/s; vs PE-level 32x32 grid measured here (%.3e cycles/s): %.0fx;"
              " vs SCALE-Sim's published ~7,000 cycles/s (not measured here): %.0fx\n",
              cps, pe_cps, cps / pe_cps, cps / 7000.0);
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xpusim_bench_tpu: error: %s\n", e.what());
    return 1;
  }
}
