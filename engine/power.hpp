// Modelled power of a device from the utilisation an engine reports (docs/power.md): a linear
// model, idle power plus the dynamic range (max - idle) scaled by the device's activity, as in
// Hong & Kim (ISCA 2010) and AccelWattch (MICRO 2021), with two activity components (compute
// units and DRAM) whose shares of the dynamic power are shared by every device.
#pragma once
#include <map>
#include <string>

#include "common/spec_reader.hpp"

namespace xpusim {

enum class Resource;

// Power figures of one device YAML. Accelerators: per device (GPU board, TPU TensorCore).
// CPUs: per physical core (package TDP / cores), so a placement of N vCPUs draws
// N / vcpus_per_core of them.
struct PowerSpec {
  double idle_power_w = 0;        // powered and in its active clock state, no unit busy
  double max_power_w = 0;         // TDP / board power: every unit busy
  double devices_per_figure = 1;  // devices (vCPUs) that one figure covers: CPUs vcpus_per_core
  std::string source;
  bool stated() const { return max_power_w > 0; }
};

// Reads `idle_power_w`, `max_power_w` and `power_source` of a device YAML (all three or none;
// 0 <= idle <= max). Absent: a spec that states no power (stated() is false).
PowerSpec read_power_spec(SpecReader& r);

// Shares of a device's dynamic power that its compute units and its DRAM draw when fully busy
// (sum 1). Shared by every device: no per-device or per-model constant. docs/power.md.
inline constexpr double kComputeDynamicShare = 0.7;
inline constexpr double kMemoryDynamicShare = 0.3;
// Where the step reports its kernel-resident share (GPUs: gpu_util_pct_smi), the share of the
// dynamic range that residency draws whatever the kernels' arithmetic: while any kernel is
// resident the board holds its boost clocks and voltage, and its clock tree, schedulers,
// caches and register files toggle; the rest of the range follows compute and DRAM as above.
// Refitted on the published RTX 2080 Ti board readings (docs/power.md, "Refit"): the fit hits
// its upper bound, 1 (a board at 70-80 % load read 77-96 % of its range).
inline constexpr double kResidentDynamicShare = 1.0;

// Busy shares of the step that the power model reads, from a report's utilisation: compute
// units (analytical `compute`; TPU `mxu`/`vector`, whichever is busier) and DRAM (`memory`,
// `hbm`); a measured GPU's busy share (`gpu`) counts for both. Each in [0, 1].
struct Activity {
  double compute = 0;
  double memory = 0;
  // Share of the step in which at least one kernel is resident (nvidia-smi's utilization.gpu),
  // at least the busier unit's share. Negative = not reported (TPUs, CPUs): compute and DRAM
  // alone set the power.
  double resident = -1;
};
Activity activity_from_utilization(const std::map<Resource, double>& utilization);

// Weighted activity in [0, 1]: busy = kComputeDynamicShare * compute + kMemoryDynamicShare *
// memory; with a resident share, kResidentDynamicShare * resident + (1 - it) * busy.
double dynamic_fraction(const Activity& a);

// Average power of one device over the step, watts: idle + (max - idle) * dynamic_fraction.
double device_power_w(const PowerSpec& p, const Activity& a);

// Average power of a placement, watts: `count` devices (vCPUs for CPUs) plus their share of the
// hosts that hold them: host_idle_power_w x count / devices_per_host (a job is charged the part
// of a host its devices occupy, as cloud carbon accounting apportions shared machines).
double placement_power_w(const PowerSpec& p, const Activity& a, int count, int devices_per_host,
                         double host_idle_power_w);

}  // namespace xpusim
