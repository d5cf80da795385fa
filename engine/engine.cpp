#include "engine/engine.hpp"

#include "common/error.hpp"

namespace xpusim {

bool parse_data_source(const std::string& s, DataSource& out) {
  if (s == "synthetic") out = DataSource::synthetic;
  else if (s == "real") out = DataSource::real;
  else return false;
  return true;
}

const char* data_source_name(DataSource d) { return d == DataSource::real ? "real" : "synthetic"; }

nlohmann::json StepReport::to_json() const {
  nlohmann::json j;
  j["engine"] = engine;
  j["device"] = device;
  j["system"] = system;
  j["model"] = model;
  j["precision"] = precision;
  j["data"] = data;
  j["count"] = count;
  j["batch_per_device"] = batch_per_device;
  j["global_batch"] = global_batch;
  j["step_time_s"] = step_time_s;
  j["throughput_samples_per_s"] = throughput_samples_per_s;
  j["memory_bytes"] = memory_bytes;
  j["memory_capacity_bytes"] = memory_capacity_bytes;
  j["fits_in_memory"] = fits_in_memory;
  j["bottleneck"] = bottleneck;
  j["utilization"] = utilization;
  j["per_op_s"] = per_op_s;
  j["extra"] = extra;
  return j;
}

}  // namespace xpusim
