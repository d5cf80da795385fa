// Test fixture for validation and calibration: a fake engine whose step time is a known
// function of the graph's work and two device constants, device YAMLs in a temporary
// config directory (models, systems and datasets linked from the real configs/), and a
// predict() replacement that routes `engine: fake` devices to it. The real engines are
// built in parallel elsewhere; this keeps the validation machinery testable on its own.
#pragma once
#include <filesystem>
#include <string>

#include "predict/predict.hpp"

namespace xpusim::test {

// step_time_s = flops_train_step / (peak_tflops * 1e12 * compute_efficiency) + step_overhead_s
// throughput  = batch * count / step_time_s;  memory = the graph's peak bytes.
StepReport fake_run_step(const StepRequest& req);
// predict() for `engine: fake` devices (and for engine "cpu", standing in for a measured run).
StepReport fake_predict(const PredictRequest& req);
// The same formula evaluated directly, for hand checks.
double fake_throughput(const std::string& model, long long batch, int count, double peak_tflops, double efficiency,
                       double overhead_s);

// A temporary config directory with devices/{fake_gpu,fake_k80,host,broken}.yaml; restores the
// previous config directory when destroyed.
class FakeConfigDir {
 public:
  FakeConfigDir();
  ~FakeConfigDir();
  FakeConfigDir(const FakeConfigDir&) = delete;
  FakeConfigDir& operator=(const FakeConfigDir&) = delete;
  std::filesystem::path path() const { return dir_; }
  void write_device(const std::string& name, const std::string& yaml) const;

 private:
  std::filesystem::path dir_;
  std::string previous_;
};

}  // namespace xpusim::test
