#include "engine/engine.hpp"
#include "engine/core_fields.hpp"

#include "common/error.hpp"

namespace xpusim {

bool parse_data_source(const std::string& s, DataSource& out) {
  if (s == "synthetic") out = DataSource::synthetic;
  else if (s == "real") out = DataSource::real;
  else return false;
  return true;
}

const char* data_source_name(DataSource d) { return d == DataSource::real ? "real" : "synthetic"; }

const char* resource_name(Resource u) {
  switch (u) {
    case Resource::compute: return "compute";
    case Resource::memory: return "memory";
    case Resource::overhead: return "overhead";
    case Resource::communication: return "communication";
    case Resource::infeed: return "infeed";
    case Resource::input_pipeline: return "input_pipeline";
    case Resource::mxu: return "mxu";
    case Resource::hbm: return "hbm";
    case Resource::vector: return "vector";
    case Resource::ici: return "ici";
    case Resource::gpu: return "gpu";
    case Resource::measured: return "measured";
  }
  return "?";
}

std::shared_ptr<const DeviceConfig> Engine::load_device(const std::string& path, const std::vector<std::string>&) const {
  throw InternalError(name() + ": takes no device YAML (" + path + ")");
}

void Engine::check_placement(ResolvedPlacement& p) const {
  p.replicas = p.device && p.device->device_class == DeviceClass::cpu ? 1 : p.count;
}

std::optional<double> StepReport::extra_number(const std::string& key) const {
  auto it = extra.find(key);
  if (it == extra.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

nlohmann::json StepReport::to_json() const {
  nlohmann::json j;
  j["engine"] = engine;
  j["device"] = device;
  j["system"] = system;
  j["model"] = model;
  j["precision"] = precision;
  j["data"] = data;
  // Only inference reports name their task, so training reports keep their shape.
  if (task == Task::inference) j["task"] = task_name(task);
  j["count"] = count;
  j["batch_per_device"] = batch_per_device;
  j["global_batch"] = global_batch;
  j["step_time_s"] = step_time_s;
  j["throughput_samples_per_s"] = throughput_samples_per_s;
  if (throughput_tokens_per_s > 0) j["throughput_tokens_per_s"] = throughput_tokens_per_s;
  j["memory_bytes"] = memory_bytes;
  j["memory_capacity_bytes"] = memory_capacity_bytes;
  j["fits_in_memory"] = fits_in_memory;
  // Only engines that model a compile report it, so reports of the others keep their shape.
  if (compile_time_s > 0) j["compile_time_s"] = compile_time_s;
  if (!framework.empty()) j["framework"] = framework;
  if (power_w > 0) {
    j["power_w"] = power_w;
    j["energy_per_step_j"] = energy_per_step_j;
  }
  j["bottleneck"] = resource_name(bottleneck);
  nlohmann::json u = nlohmann::json::object();
  for (const auto& [unit, v] : utilization) u[resource_name(unit)] = v;
  j["utilization"] = u;
  j["per_op_s"] = per_op_s;
  j["extra"] = extra;
  add_core_fields(*this, j);
  return j;
}

nlohmann::json StepReport::to_record() const {
  nlohmann::json j = to_json();
  for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
  j.erase("extra");
  return j;
}

}  // namespace xpusim
