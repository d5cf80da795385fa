// The predict request most unit tests start from: a model at a per-device batch on COUNT
// devices of one kind (the system: the device's default when empty), in a precision. Tests set
// the rest (framework, data, overrides, build) on the returned request.
#pragma once
#include <cstdint>
#include <string>

#include "predict/predict.hpp"

namespace xpusim::fixtures {

inline PredictRequest predict_request(const std::string& device, int count, const std::string& model, int64_t batch,
                                      const std::string& precision = "fp32", const std::string& system = "") {
  PredictRequest r;
  r.model = model;
  r.batch_per_device = batch;
  r.precision = precision;
  r.placement.device = device;
  r.placement.count = count;
  r.placement.system = system;
  return r;
}

}  // namespace xpusim::fixtures
