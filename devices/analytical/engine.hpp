// The `analytical` engine: predicts a training step of GPUs and cloud CPUs from the graph's
// counted work and the device's rates (rates.hpp, op_cost.hpp); the step over several devices
// is composed by parallel/step_composer.hpp, where compute and communication run on two
// timelines so gradient all-reduces overlap the rest of the backward pass, as
// TensorFlow/PyTorch/Horovod do. The host's input pipeline is the host pass's (predict/).
#pragma once
#include <string>
#include <vector>

#include "engine/engine.hpp"

namespace xpusim::analytical {

class AnalyticalEngine final : public Engine {
 public:
  std::string name() const override { return "analytical"; }
  bool has_trace() const override { return true; }  // estimated per-op timeline (trace.hpp)
  bool models_gradient_accumulation() const override { return true; }  // parallel/step_composer
  std::string description() const override;
  Availability availability() const override { return {true, true, ""}; }
  std::shared_ptr<const DeviceConfig> load_device(const std::string& path,
                                                  const std::vector<std::string>& overrides) const override;
  // GPUs are data-parallel replicas; the vCPUs of one CPU machine are not.
  void check_placement(ResolvedPlacement& p) const override;
  StepReport run_step(const StepRequest& req) override;
};

// Seconds of each op of one device's step on a resolved analytical placement, indexed by op
// id: the roofline's max(compute, memory) + launch overhead, what run_step prices. Gradient
// all-reduces are 0 here: their time is the network's (the step composer's, or the network
// simulator a Chakra export feeds). FieldError("precision") when the device lacks it.
std::vector<double> op_times_s(const OpGraph& g, const ResolvedPlacement& p);

}  // namespace xpusim::analytical
