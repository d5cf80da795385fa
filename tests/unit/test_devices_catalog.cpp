// The devices and systems users rent today (issue 13): every new device YAML loads, carries
// the efficiency constants of its architecture's calibrated device (efficiency_from, never
// tuned per device), predicts ResNet-50 on every system that holds it in full and mixed precision, and
// physically sane orderings hold (SXM over PCIe, 80 GB over 40 GB, NVSwitch over a PCIe ring).
// Expectations are inequalities and hand-derived link bandwidths, never fitted outputs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <yaml-cpp/yaml.h>

#include "common/config_paths.hpp"
#include "common/error.hpp"
#include "devices/analytical/device_spec.hpp"
#include "engine/platform_spec.hpp"
#include "parallel/topology.hpp"
#include "predict/predict.hpp"
#include "tests/unit/predict_request.hpp"

using namespace xpusim;
using namespace xpusim::analytical;

namespace {

// New device -> the calibrated device whose efficiency constants it copies (docs/analytical-model.md).
const std::map<std::string, std::string>& new_devices() {
  static const std::map<std::string, std::string> m = {
      {"a100_sxm4_80gb", "a100_sxm4_40gb"}, {"a100_pcie_40gb", "a100_sxm4_40gb"},
      {"a100_pcie_80gb", "a100_sxm4_40gb"}, {"h100_pcie", "h100_sxm5"},
      {"v100_sxm3_32gb", "v100_sxm2_16gb"}, {"rtx_3090", "a100_sxm4_40gb"},
      {"rtx_4090", "a100_sxm4_40gb"},       {"rtx_a6000", "a100_sxm4_40gb"},
      {"rtx_6000_ada", "a100_sxm4_40gb"},   {"a10", "a100_sxm4_40gb"},
      {"quadro_rtx_8000", "titan_rtx"},     {"b200", "v100_sxm2_16gb"},
      {"gb200", "v100_sxm2_16gb"},
  };
  return m;
}

const std::vector<std::string> kNewSystems = {"server_pcie", "server_pcie_nvlink", "server_sxm", "dgx2"};

StepReport run(const std::string& device, const std::string& system, int count, const std::string& model, int64_t batch,
               const std::string& precision, std::vector<std::string> overrides = {}) {
  PredictRequest r = fixtures::predict_request(device, count, model, batch, precision, system);
  r.placement.overrides = std::move(overrides);
  return predict(r);
}

// fp32, or TF32 where the device has TF32 tensor cores (what a framework uses by default there).
std::string full_precision(const DeviceSpec& d) { return d.supports(Precision::tf32) ? "tf32" : "fp32"; }
std::string mixed_precision(const DeviceSpec& d) { return d.supports(Precision::mixed_bf16) ? "mixed_bf16" : "mixed_fp16"; }

}  // namespace

TEST_CASE("every new device loads with datasheet figures and its architecture's constants", "[devices]") {
  for (const auto& [name, calibrated] : new_devices()) {
    INFO(name << " copies " << calibrated);
    const DeviceSpec d = load_device_spec(name);
    const DeviceSpec c = load_device_spec(calibrated);
    CHECK(d.name == name);
    CHECK(d.kind == DeviceKind::gpu);
    CHECK(d.memory_bytes >= 24'000'000'000);
    CHECK(d.memory_bandwidth_gbps > 500);
    CHECK(d.fp32_tflops > 10);
    CHECK(d.tensor_fp16_tflops > d.fp32_tflops);  // every one has tensor cores
    CHECK(d.sm_count >= 72);
    CHECK(d.pcie_gbps > 0);
    CHECK(d.supports(Precision::fp32));
    CHECK(d.supports(Precision::mixed_fp16));
    // Ampere and later: TF32 and bf16 tensor cores; Volta and Turing have neither.
    CHECK(d.supports(Precision::tf32) == (d.tensor_tf32_tflops > 0));
    CHECK(d.supports(Precision::mixed_bf16) == (d.tensor_bf16_tflops > 0));
    CHECK(d.source.size() > 40);
    // Constants come from the calibrated device of the same architecture, unchanged.
    // The kernel model's four constants are the architecture's (issue 29, docs/gpu_model.md);
    // devices priced by the roofline take them from the calibrated device.
    if (d.kernel_model()) {
      CHECK(d.compute_efficiency == d.arch.cuda_efficiency);
      CHECK(d.tensor_efficiency == d.arch.tensor_efficiency);
      CHECK(d.op_overhead_us == d.arch.launch_us);
      CHECK(d.memory_efficiency == d.arch.memory_efficiency);
    } else {
      CHECK(d.compute_efficiency == c.compute_efficiency);
      CHECK(d.tensor_efficiency == c.tensor_efficiency);
      CHECK(d.op_overhead_us == c.op_overhead_us);
      CHECK(d.memory_efficiency == c.memory_efficiency);
    }
    CHECK(d.allreduce_efficiency == c.allreduce_efficiency);
    CHECK(d.winograd_speedup == c.winograd_speedup);
    CHECK(d.step_overhead_ms == c.step_overhead_ms);
    CHECK(d.comm_overlap == c.comm_overlap);
    CHECK(d.gemm_tile_n == c.gemm_tile_n);
    CHECK(d.reserved_bytes == c.reserved_bytes);
    CHECK(d.workspace_fraction == c.workspace_fraction);
  }
}

namespace {

// A device YAML in a temporary directory; `body` follows the minimal GPU fields.
std::string temp_device(const std::string& stem, const std::string& body) {
  const auto dir = std::filesystem::temp_directory_path() / "xpusim_efficiency_from";
  std::filesystem::create_directories(dir);
  const auto path = dir / (stem + ".yaml");
  std::ofstream f(path);
  f << "name: " << stem << "\nengine: analytical\nkind: gpu\ndefault_system: single_gpu\nsource: test\n"
    << "memory_gb: 16\nmemory_bandwidth_gbps: 900\nfp32_tflops: 15\nsm_count: 80\narchitecture: pascal\n" << body;
  return path.string();
}

}  // namespace

TEST_CASE("efficiency_from: every GPU without rows takes its constants from its generation's device at load time",
          "[devices]") {
  // The chain resolves to the calibrated values: a refit of P100 reaches V100, A100 and A10.
  const DeviceSpec p100 = load_device_spec("p100_sxm2"), v100 = load_device_spec("v100_sxm2_16gb");
  const DeviceSpec a100 = load_device_spec("a100_sxm4_40gb"), a10 = load_device_spec("a10");
  CHECK(v100.efficiency_from == "p100_sxm2");
  CHECK(a10.efficiency_from == "a100_sxm4_40gb");
  for (const DeviceSpec* d : {&v100, &a100, &a10}) {
    INFO(d->name);
    CHECK(d->allreduce_efficiency == p100.allreduce_efficiency);
    CHECK(d->winograd_speedup == p100.winograd_speedup);
    if (d->kernel_model()) {
      // A100 and A10 are priced by the kernel model: its constants are their architecture's
      // (issue 29), whatever the chain passes down.
      CHECK(d->op_overhead_us == d->arch.launch_us);
      CHECK(d->compute_efficiency == d->arch.cuda_efficiency);
      CHECK(d->tensor_efficiency == d->arch.tensor_efficiency);
    } else {
      CHECK(d->op_overhead_us == p100.op_overhead_us);
      CHECK(d->compute_efficiency == p100.compute_efficiency);
      CHECK(d->tensor_efficiency == v100.tensor_efficiency);  // V100's own fitted value, passed down
    }
  }
  CHECK(v100.tensor_efficiency != p100.tensor_efficiency);  // a value the file sets wins
  // No device file but the calibrated ones (and V100's fitted tensor value) sets a shared
  // constant by hand: hand copies are what went stale.
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(config_dir()) / "devices")) {
    const std::string stem = e.path().stem().string();
    YAML::Node raw = YAML::LoadFile(e.path().string());
    if (!raw["efficiency_from"]) continue;
    INFO(stem);
    for (const char* k : {"compute_efficiency", "op_overhead_us", "allreduce_efficiency", "winograd_speedup",
                          "memory_efficiency", "step_overhead_ms", "comm_overlap"})
      CHECK_FALSE(raw[k]);
    if (stem != "v100_sxm2_16gb") CHECK_FALSE(raw["tensor_efficiency"]);
  }
}

TEST_CASE("efficiency_from: an override beats the inherited value, and bad chains are refused naming the key",
          "[devices]") {
  // No `precisions:` in these files: a missing optional list is its default (fp32), not an error.
  const std::string child = temp_device("eff_child", "efficiency_from: p100_sxm2\n");
  CHECK(load_device_spec(child).precisions == std::vector<std::string>{"fp32"});
  CHECK(load_device_spec(child).op_overhead_us == load_device_spec("p100_sxm2").op_overhead_us);
  CHECK(load_device_spec(child, {"op_overhead_us=5"}).op_overhead_us == 5);
  const std::string own = temp_device("eff_own", "efficiency_from: p100_sxm2\nop_overhead_us: 7\n");
  CHECK(load_device_spec(own).op_overhead_us == 7);
  CHECK(load_device_spec(own).allreduce_efficiency == load_device_spec("p100_sxm2").allreduce_efficiency);

  const std::string unknown = temp_device("eff_unknown", "efficiency_from: no_such_gpu\n");
  CHECK_THROWS_WITH(load_device_spec(unknown),
                    Catch::Contains(unknown + ":11: efficiency_from: ") && Catch::Contains("no_such_gpu"));
  // a -> b -> a: a cycle, named at the link that closes it.
  const auto dir = std::filesystem::temp_directory_path() / "xpusim_efficiency_from";
  const std::string a = temp_device("eff_cycle_a", "efficiency_from: " + (dir / "eff_cycle_b.yaml").string() + "\n");
  temp_device("eff_cycle_b", "efficiency_from: " + a + "\n");
  CHECK_THROWS_WITH(load_device_spec(a), Catch::Contains("efficiency_from: ") && Catch::Contains("cycle"));
  // A GPU cannot take a CPU's constants.
  const std::string cpu = temp_device("eff_from_cpu", "efficiency_from: gce_skylake_vcpu\n");
  CHECK_THROWS_WITH(load_device_spec(cpu), Catch::Contains("efficiency_from: ") && Catch::Contains("of its kind"));
  CHECK_THROWS_AS(load_device_spec(temp_device("eff_empty", "efficiency_from: ''\n")), UserError);
}

TEST_CASE("the new systems hold only devices they can physically take", "[devices]") {
  for (const auto& name : kNewSystems) {
    INFO(name);
    const SystemSpec s = find_system(name);
    CHECK(!s.devices.empty());
    for (const auto& dev : s.devices) {
      INFO(dev);
      const DeviceSpec d = load_device_spec(dev);
      CHECK(d.kind == DeviceKind::gpu);
      // NVLink systems need cards with NVLink; the pure PCIe server takes no SXM module.
      if (s.intra_host.topology == Topology::nvlink_bridge_pairs || s.intra_host.topology == Topology::nvswitch)
        CHECK(d.nvlink_gbps > 0);
      const bool sxm_module = d.description.find("SXM") != std::string::npos;
      if (name == "server_pcie" || name == "server_pcie_nvlink") CHECK_FALSE(sxm_module);
      if (name == "server_sxm" || name == "dgx2") CHECK(sxm_module);
    }
  }
  // Every new device's default system holds it.
  for (const auto& [name, calibrated] : new_devices()) {
    INFO(name);
    const DeviceSpec d = load_device_spec(name);
    const SystemSpec s = find_system(d.default_system);
    CHECK(std::find(s.devices.begin(), s.devices.end(), name) != s.devices.end());
  }
}

namespace {
double intra_gbps(Topology t, double system_gbps, int local, double pcie, double nvlink) {
  return parallel::intra_node_gbps(t, system_gbps, local, parallel::DevicePorts{pcie, nvlink});
}
}  // namespace

TEST_CASE("a collective's link is the slower end: the system's link capped by the card's port", "[devices]") {
  // Ports of 0 = not stated: the system's figure alone (every device before issue 13).
  CHECK(intra_gbps(Topology::pcie_tree, 10, 2, 0, 0) == 10);
  CHECK(intra_gbps(Topology::nvswitch, 300, 8, 0, 0) == 300);
  CHECK(intra_gbps(Topology::nvlink_hybrid_cube_mesh, 75, 8, 24, 300) == 75);
  // A Gen4 card (24 GB/s) in a Gen5 server (50) moves Gen4 rates; an A100 (NVLink 3, 300) on
  // an NVLink-4 switch (450) moves NVLink-3 rates.
  CHECK(intra_gbps(Topology::pcie_tree, 50, 8, 24, 0) == 24);
  CHECK(intra_gbps(Topology::nvswitch, 450, 8, 24, 300) == 300);
  CHECK(intra_gbps(Topology::nvswitch, 450, 8, 50, 450) == 450);
  // Bridged pairs: 2 GPUs use the bridge; 4 or 8 ring across PCIe between the pairs.
  CHECK(intra_gbps(Topology::nvlink_bridge_pairs, 50, 2, 24, 56.25) == 56.25);
  CHECK(intra_gbps(Topology::nvlink_bridge_pairs, 50, 4, 24, 56.25) == 24);
  CHECK(intra_gbps(Topology::nvlink_bridge_pairs, 50, 8, 50, 300) == 50);
  CHECK(intra_gbps(Topology::nvlink_bridge_pairs, 50, 1, 24, 56.25) == 24);
}

TEST_CASE("a card without PCIe peer-to-peer shares the host's staging bandwidth", "[devices]") {
  using parallel::DevicePorts;
  using parallel::intra_node_gbps;
  const DevicePorts geforce{24, 0, false}, pro{24, 0, true};
  // 48 GB/s of staging over 8 GPUs: 6 GB/s each, below the card's 24 GB/s port.
  CHECK(intra_node_gbps(Topology::pcie_tree, 50, 8, geforce, 48) == Approx(6));
  CHECK(intra_node_gbps(Topology::pcie_tree, 50, 4, geforce, 48) == Approx(12));
  // 2 GPUs: 24 GB/s each, the port is the limit again.
  CHECK(intra_node_gbps(Topology::pcie_tree, 50, 2, geforce, 48) == Approx(24));
  // A card with peer-to-peer, or a host that states no staging limit: the link alone.
  CHECK(intra_node_gbps(Topology::pcie_tree, 50, 8, pro, 48) == Approx(24));
  CHECK(intra_node_gbps(Topology::pcie_tree, 50, 8, geforce, 0) == Approx(24));
  // A bridged pair still exchanges over its bridge; 4 bridged GeForce cards cross PCIe staged.
  const DevicePorts bridged{24, 56.25, false};
  CHECK(intra_node_gbps(Topology::nvlink_bridge_pairs, 50, 2, bridged, 48) == Approx(56.25));
  CHECK(intra_node_gbps(Topology::nvlink_bridge_pairs, 50, 4, bridged, 48) == Approx(12));
}

TEST_CASE("every new device on every system that holds it predicts ResNet-50 in full and mixed precision",
          "[devices]") {
  int checked = 0;
  std::vector<std::string> systems = kNewSystems;
  systems.push_back("dgx_a100");
  systems.push_back("dgx_b200");
  systems.push_back("gb200_nvl72");
  for (const auto& sys_name : systems) {
    const SystemSpec s = find_system(sys_name);
    const bool new_system = std::find(kNewSystems.begin(), kNewSystems.end(), sys_name) != kNewSystems.end();
    for (const auto& dev : s.devices) {
      if (!new_system && !new_devices().count(dev)) continue;
      const DeviceSpec d = load_device_spec(dev);
      for (int count : {1, s.max_devices}) {
        for (const std::string& precision : {full_precision(d), mixed_precision(d)}) {
          INFO(dev << " on " << sys_name << " x" << count << " " << precision);
          const StepReport r = run(dev, sys_name, count, "resnet50", 64, precision);
          CHECK(r.system == sys_name);
          CHECK(std::isfinite(r.throughput_samples_per_s));
          CHECK(r.throughput_samples_per_s > 0);
          CHECK(r.global_batch == 64 * count);
          CHECK(r.memory_capacity_bytes == d.memory_bytes);
          CHECK(r.fits_in_memory == (r.memory_bytes <= r.memory_capacity_bytes));
          // ResNet-50 at 64 images per GPU needs well under 24 GB (the smallest new card).
          CHECK(r.fits_in_memory);
          ++checked;
        }
        const double full = run(dev, sys_name, count, "resnet50", 64, full_precision(d)).throughput_samples_per_s;
        const double mixed = run(dev, sys_name, count, "resnet50", 64, mixed_precision(d)).throughput_samples_per_s;
        INFO(dev << " on " << sys_name << " x" << count);
        CHECK(mixed > full);  // 16-bit tensor cores run at least twice the TF32/fp32 rate on all of them
      }
    }
  }
  // server_pcie 17 cards, server_pcie_nvlink 9, server_sxm 5, and two new devices on their
  // DGX/desktop systems (issue 29 seated every PCIe card in the PCIe servers), B200 on DGX B200,
  // GB200 on its NVL72 rack.
  CHECK(checked == 2 * 2 * (17 + 9 + 5 + 1 + 1 + 1 + 1));
}

TEST_CASE("rented devices order the way their datasheets say", "[devices]") {
  SECTION("H100 PCIe is slower than H100 SXM5 (lower clocks, HBM2e, fewer SMs)") {
    for (const std::string p : {"tf32", "mixed_bf16", "mixed_fp16"}) {
      INFO(p);
      CHECK(run("h100_pcie", "server_pcie", 1, "resnet50", 128, p).throughput_samples_per_s <
            run("h100_sxm5", "server_sxm", 1, "resnet50", 128, p).throughput_samples_per_s);
    }
  }
  SECTION("RTX 4090 is faster than RTX 3090, and the A100 faster than the A10") {
    for (const std::string p : {"fp32", "tf32", "mixed_fp16"}) {
      INFO(p);
      CHECK(run("rtx_4090", "server_pcie", 1, "resnet50", 64, p).throughput_samples_per_s >
            run("rtx_3090", "server_pcie", 1, "resnet50", 64, p).throughput_samples_per_s);
      CHECK(run("a100_pcie_40gb", "server_pcie", 1, "resnet50", 64, p).throughput_samples_per_s >
            run("a10", "server_pcie", 1, "resnet50", 64, p).throughput_samples_per_s);
    }
  }
  SECTION("B200 is faster than H100 SXM5, GB200 (1,200 W, higher clock) than B200") {
    // Ratios bounded by the datasheets: a step cannot speed up by more than the larger of the
    // tensor (2,250 / 989.4 = 2.27x) and DRAM (8 / 3.35 = 2.39x) ratios.
    for (const std::string p : {"tf32", "mixed_bf16"}) {
      INFO(p);
      const double h100 = run("h100_sxm5", "dgx_h100", 1, "resnet50", 256, p).throughput_samples_per_s;
      const double b200 = run("b200", "dgx_b200", 1, "resnet50", 256, p).throughput_samples_per_s;
      const double gb200 = run("gb200", "gb200_nvl72", 1, "resnet50", 256, p).throughput_samples_per_s;
      CHECK(b200 > h100);
      CHECK(b200 < 2.39 * h100);
      CHECK(gb200 > b200);
      CHECK(gb200 < 2500.0 / 2250.0 * b200 + 1e-9);  // same memory, 11 % more clock
    }
  }
  SECTION("A100 80 GB fits a batch that A100 40 GB does not") {
    // ResNet-50 at 512 images needs ~46 GB (fp32 activations dominate).
    const StepReport a40 = run("a100_sxm4_40gb", "server_sxm", 1, "resnet50", 512, "tf32");
    const StepReport a80 = run("a100_sxm4_80gb", "server_sxm", 1, "resnet50", 512, "tf32");
    CHECK(a40.memory_bytes == a80.memory_bytes);  // same model, same batch
    CHECK_FALSE(a40.fits_in_memory);
    CHECK(a80.fits_in_memory);
    // 48 GB cards fit it too; 24 GB cards do not.
    CHECK(run("rtx_a6000", "server_pcie", 1, "resnet50", 512, "tf32").fits_in_memory);
    CHECK_FALSE(run("rtx_4090", "server_pcie", 1, "resnet50", 512, "tf32").fits_in_memory);
  }
  SECTION("8 GPUs on an NVSwitch board scale better than 8 on PCIe for a large model") {
    // VGG16: 138 M parameters, 553 MB of fp32 gradients per step. The two A100 80 GB parts
    // have the same compute peaks, so the difference is the interconnect.
    auto scaling = [](const std::string& dev, const std::string& sys) {
      return run(dev, sys, 8, "vgg16", 64, "mixed_fp16").throughput_samples_per_s /
             run(dev, sys, 1, "vgg16", 64, "mixed_fp16").throughput_samples_per_s;
    };
    const double sxm8 = run("a100_sxm4_80gb", "server_sxm", 8, "vgg16", 64, "mixed_fp16").throughput_samples_per_s;
    const double pcie8 = run("a100_pcie_80gb", "server_pcie", 8, "vgg16", 64, "mixed_fp16").throughput_samples_per_s;
    CHECK(sxm8 > 1.2 * pcie8);
    CHECK(scaling("a100_sxm4_80gb", "server_sxm") > scaling("a100_pcie_80gb", "server_pcie"));
    CHECK(scaling("a100_sxm4_80gb", "server_sxm") <= 8.0);
  }
  SECTION("an NVLink bridge helps a pair; beyond a pair the ring crosses PCIe") {
    const double pcie2 = run("rtx_3090", "server_pcie", 2, "vgg16", 64, "mixed_fp16").throughput_samples_per_s;
    const double bridged2 = run("rtx_3090", "server_pcie_nvlink", 2, "vgg16", 64, "mixed_fp16").throughput_samples_per_s;
    CHECK(bridged2 > pcie2);
    const StepReport pcie4 = run("rtx_3090", "server_pcie", 4, "vgg16", 64, "mixed_fp16");
    const StepReport bridged4 = run("rtx_3090", "server_pcie_nvlink", 4, "vgg16", 64, "mixed_fp16");
    CHECK(bridged4.step_time_s == Approx(pcie4.step_time_s));
  }
  SECTION("a Gen3 card in the Gen5 server exchanges slower than a Gen4 card of the same class") {
    // Same settings but the port: the Quadro RTX 8000 (Gen3) against itself with a Gen4 port.
    const double gen3 = run("quadro_rtx_8000", "server_pcie", 8, "vgg16", 64, "mixed_fp16").throughput_samples_per_s;
    const double gen4 =
        run("quadro_rtx_8000", "server_pcie", 8, "vgg16", 64, "mixed_fp16", {"pcie_gbps=24"}).throughput_samples_per_s;
    CHECK(gen3 < gen4);
  }
  SECTION("DGX-2: NVSwitch beats the DGX-1's cube mesh with the same V100, and 16 GPUs beat 8") {
    const double dgx2_8 = run("v100_sxm3_32gb", "dgx2", 8, "vgg16", 64, "mixed_fp16").throughput_samples_per_s;
    const double dgx1_8 = run("v100_sxm2_32gb", "dgx1v_nvlink", 8, "vgg16", 64, "mixed_fp16").throughput_samples_per_s;
    CHECK(dgx2_8 > dgx1_8);
    CHECK(run("v100_sxm3_32gb", "dgx2", 16, "resnet50", 64, "mixed_fp16").throughput_samples_per_s > 1.5 * run("v100_sxm3_32gb", "dgx2", 8, "resnet50", 64, "mixed_fp16").throughput_samples_per_s);
  }
}

TEST_CASE("a bridged-pair system refuses a card without NVLink", "[devices]") {
  try {
    run("rtx_3090", "server_pcie_nvlink", 2, "resnet50", 64, "fp32", {"nvlink_gbps=0"});
    FAIL("expected a FieldError");
  } catch (const FieldError& e) {
    CHECK(e.field() == "system");
    CHECK(e.message().find("nvlink_gbps") != std::string::npos);
  }
  // The RTX 4090 has no NVLink connector, so that system does not list it.
  CHECK_THROWS_AS(run("rtx_4090", "server_pcie_nvlink", 2, "resnet50", 64, "fp32"), FieldError);
}
