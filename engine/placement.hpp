// Where a step runs, in two forms: the Placement a caller asks for (names, as typed on the
// command line or in a CSV row or study), and the ResolvedPlacement that predict() builds
// from it once per request — device spec parsed by its engine, system spec, CPU build,
// replica count and dataset — so that no engine re-reads a YAML file. Engines only read the
// resolved form.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/framework_spec.hpp"
#include "engine/platform_spec.hpp"
#include "engine/power.hpp"

namespace xpusim {

// The framework build of a CPU device: pip wheels target SSE only; compiled builds use
// AVX2/AVX-512 and FMA (docs/analytical-model.md).
enum class CpuBuild { pip, compiled };
bool parse_cpu_build(const std::string& s, CpuBuild& out);
const char* cpu_build_name(CpuBuild b);
// The build a framework name implies ("keras-tf1.2-pip" / "-compiled", as the reference CSV
// writes the cloud-CPU study's stacks); empty when the name names none.
std::optional<CpuBuild> cpu_build_in_framework_name(const std::string& framework);

// What a device is to the layers above the engines: accelerators are data-parallel replicas,
// the vCPUs of one CPU machine are one worker (and take a framework build).
enum class DeviceClass { accelerator, cpu };

struct Placement {
  std::string device;                    // a name under configs/devices/, a YAML path, or a real backend (cpu, cuda)
  int count = 1;                         // GPUs, TPU cores or vCPUs (the CSV's num_devices)
  std::string system;                    // configs/systems/ name; empty = the device's default
  std::optional<CpuBuild> build;         // CPUs only; empty = the device's default
  std::vector<std::string> overrides;    // KEY=VALUE on the device YAML (the CLI's --set);
                                         // framework.KEY=VALUE on the framework profile
  std::string framework;                 // a profile (configs/frameworks/) or a name one lists; empty = neutral
};

// A device YAML parsed by the engine it names. Each engine derives its own spec from this
// base; the layers above see only these fields.
struct DeviceConfig {
  virtual ~DeviceConfig() = default;
  std::string name;
  std::string file;
  std::string default_system;            // empty for real backends
  DeviceClass device_class = DeviceClass::accelerator;
  PowerSpec power;                       // for modelled energy (docs/power.md); not stated = none
};

// How the host's input pipeline feeds a placement, as its engine states it (check_placement):
// the pipeline may use `cores` cores of `core_speed` (fewer when the framework limits its
// threads) and prepares the samples of `devices_fed` devices per step.
struct InputFeed {
  double cores = 1;
  double core_speed = 1;
  int devices_fed = 1;
  // SMT: `cores` are hardware threads, threads_per_core to a physical core (HostSpec); a
  // pipeline on fewer threads than `cores` runs them on cores of their own first.
  int threads_per_core = 1;
  double smt_yield = 0;
  std::string system;  // the system's name, for a framework's per-system worker count
};

struct ResolvedPlacement {
  Placement requested;                          // as asked, for reports and cache keys
  std::shared_ptr<const DeviceConfig> device;   // null for real backends (cpu, cuda)
  std::shared_ptr<const SystemSpec> system;     // null for real backends
  int count = 1;
  int replicas = 1;                             // data-parallel replicas the graph is lowered for
  InputFeed input_feed;                         // set by the engine's check_placement
  std::optional<CpuBuild> build;                // set for CPU devices
  std::optional<CpuBuild> framework_build;      // implied by the framework name; CPU devices use it
                                                // when no build was asked for, accelerators ignore it
  std::shared_ptr<const DatasetSpec> dataset;   // the model's dataset; null when not needed
  std::shared_ptr<const FrameworkSpec> framework;  // never null after resolution (neutral by default)

  // The engine's own spec type; InternalError when the placement was resolved by another engine.
  template <class Spec>
  const Spec& device_as() const;
};

}  // namespace xpusim

#include "common/error.hpp"

namespace xpusim {
template <class Spec>
const Spec& ResolvedPlacement::device_as() const {
  const Spec* s = dynamic_cast<const Spec*>(device.get());
  if (!s) throw InternalError("placement: device spec of '" + requested.device + "' belongs to another engine");
  return *s;
}
}  // namespace xpusim
