// The `analytical` engine: predicts a training step of GPUs and cloud CPUs from the graph's
// counted work, the device's rates (rates.hpp, op_cost.hpp), the system's links (comm.hpp)
// and the host's input pipeline. Compute and communication run on two timelines so gradient
// all-reduces overlap the rest of the backward pass, as TensorFlow/PyTorch/Horovod do.
#pragma once
#include <string>

#include "engine/engine.hpp"

namespace xpusim::analytical {

class AnalyticalEngine final : public Engine {
 public:
  std::string name() const override { return "analytical"; }
  std::string description() const override;
  Availability availability() const override { return {true, true, ""}; }
  // GPUs are data-parallel replicas; the vCPUs of one CPU machine are not.
  int replicas(const Placement& p) const override;
  void check_placement(const Placement& p) const override;
  StepReport run_step(const StepRequest& req) override;
};

}  // namespace xpusim::analytical
