// Maps each engine's own statistics onto the shared core fields (see core_fields.hpp).
#include "engine/core_fields.hpp"

#include "engine/engine.hpp"

namespace xpusim {

namespace {
// The first of `keys` that `obj` holds as a number (nullptr: none).
const nlohmann::json* first_number(const nlohmann::json& obj, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    auto it = obj.find(k);
    if (it != obj.end() && it->is_number()) return &*it;
  }
  return nullptr;
}
}  // namespace

void add_core_fields(const StepReport& rep, nlohmann::json& j) {
  const nlohmann::json& x = rep.extra;
  // FLOPs one device executes per step: the analytical model's graph FLOPs, the TPU's MXU
  // FLOPs per core (engines set flops_per_step); per device, like every per-step field.
  const nlohmann::json* flops = first_number(x, {"flops_per_step"});
  j["flops_per_step"] = flops ? *flops : nlohmann::json();
  const nlohmann::json* achieved = first_number(x, {"achieved_flops_per_s"});
  if (achieved) j["achieved_flops_per_s"] = *achieved;
  else if (flops && rep.step_time_s > 0) j["achieved_flops_per_s"] = flops->get<double>() / rep.step_time_s;
  else j["achieved_flops_per_s"] = nullptr;
  // Model FLOPs utilisation: achieved over the device's peak at the run's precision.
  const nlohmann::json* peak = first_number(x, {"peak_flops_per_s"});
  if (peak && peak->get<double>() > 0 && j["achieved_flops_per_s"].is_number())
    j["mfu"] = j["achieved_flops_per_s"].get<double>() / peak->get<double>();
  else j["mfu"] = nullptr;
  const nlohmann::json* hbm = first_number(x, {"hbm_bytes_per_step", "bytes_per_step"});
  j["hbm_bytes_per_step"] = hbm ? *hbm : nlohmann::json();
  if (!j.contains("power_w")) j["power_w"] = nullptr;
  // utilization.compute / memory / network from each engine's unit names.
  nlohmann::json& u = j["utilization"];
  if (!u.is_object()) u = nlohmann::json::object();
  auto alias = [&](const char* core, std::initializer_list<const char*> names) {
    if (u.contains(core)) return;
    const nlohmann::json* v = first_number(u, names);
    u[core] = v ? *v : nlohmann::json();
  };
  alias("compute", {"mxu", "gpu"});
  alias("memory", {"hbm"});
  alias("network", {"communication", "ici"});
}

}  // namespace xpusim
