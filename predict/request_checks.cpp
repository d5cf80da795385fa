// The checks of a prediction request that need no engine (predict.hpp): its fields, and which
// engine its device names. Apart from predict.cpp so that loaders that check requests (sweep
// specs) build without the engines: the sweep_yaml fuzzer links this file only.
#include "common/config_paths.hpp"
#include "common/error.hpp"
#include "common/spec_reader.hpp"
#include "predict/predict.hpp"

namespace xpusim {

void check_request_fields(const PredictRequest& r) {
  if (r.batch_per_device <= 0) throw FieldError("batch", "must be > 0, got " + std::to_string(r.batch_per_device));
  if (r.placement.count <= 0) throw FieldError("count", "must be > 0, got " + std::to_string(r.placement.count));
  if (r.steps <= 0) throw FieldError("steps", "must be > 0, got " + std::to_string(r.steps));
  if (r.warmup < 0) throw FieldError("warmup", "must be >= 0, got " + std::to_string(r.warmup));
  if (r.seq_len < 0) throw FieldError("seq_len", "must be > 0, got " + std::to_string(r.seq_len));
  if (r.threads < 0) throw FieldError("threads", "must be >= 0, got " + std::to_string(r.threads));
}

std::string device_yaml_path(const std::string& device) {
  return find_config_file("devices", device, "device", "device");
}

std::string engine_for_device(const std::string& device) {
  std::string path = device_yaml_path(device);
  YAML::Node n = load_config_yaml(path);
  if (!n.IsMap() || !n["engine"] || !n["engine"].IsScalar())
    throw UserError(yaml_location(path, n) + ": engine: required field is missing (analytical or tpu_systemc)");
  return n["engine"].Scalar();
}

Precision request_precision(const PredictRequest& r) {
  Precision p{};
  if (!parse_precision(r.precision, p))
    throw FieldError("precision", "unknown precision '" + r.precision + "' (one of " + precision_choices() + ")");
  return p;
}

void check_request_specs(const PredictRequest& r) {
  check_request_fields(r);
  request_precision(r);
  find_model(r.model, r.onnx);
  if (r.engine.empty()) engine_for_device(r.placement.device);
  else device_yaml_path(r.placement.device);
}

}  // namespace xpusim
