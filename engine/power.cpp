// Linear power model of docs/power.md.
#include "engine/power.hpp"

#include <algorithm>

#include "engine/engine.hpp"

namespace xpusim {

PowerSpec read_power_spec(SpecReader& r) {
  PowerSpec p;
  const bool any = r.has("max_power_w") || r.has("idle_power_w") || r.has("power_source");
  auto non_negative = [](double v) { return v >= 0 ? "" : "must be >= 0"; };
  p.max_power_w = r.number("max_power_w", any ? std::nullopt : std::optional<double>(0.0), "W",
                           "TDP / board power with every unit busy (GPU: board, TPU: TensorCore, CPU: physical core)",
                           [any](double v) { return v > 0 || !any ? "" : "must be > 0"; });
  p.idle_power_w = r.number("idle_power_w", any ? std::nullopt : std::optional<double>(0.0), "W",
                            "powered in its active clock state, no unit busy (same unit as max_power_w)", non_negative);
  p.source = r.text("power_source", any ? std::nullopt : std::optional<std::string>(""),
                    "where max_power_w and idle_power_w come from");
  if (any && p.idle_power_w > p.max_power_w) r.fail("idle_power_w", "must be <= max_power_w");
  return p;
}

Activity activity_from_utilization(const std::map<Resource, double>& u) {
  auto get = [&](Resource k) {
    auto it = u.find(k);
    return it == u.end() ? 0.0 : std::clamp(it->second, 0.0, 1.0);
  };
  Activity a;
  a.compute = std::max({get(Resource::compute), get(Resource::mxu), get(Resource::vector), get(Resource::gpu)});
  a.memory = std::max({get(Resource::memory), get(Resource::hbm), get(Resource::gpu)});
  return a;
}

double dynamic_fraction(const Activity& a) {
  const double compute = std::clamp(a.compute, 0.0, 1.0);
  const double memory = std::clamp(a.memory, 0.0, 1.0);
  const double busy = kComputeDynamicShare * compute + kMemoryDynamicShare * memory;
  if (a.resident < 0) return std::clamp(busy, 0.0, 1.0);
  // A unit that is busy has a kernel resident: the resident share is at least the busier one's.
  const double resident = std::clamp(std::max({a.resident, compute, memory}), 0.0, 1.0);
  return std::clamp(kResidentDynamicShare * resident + (1.0 - kResidentDynamicShare) * busy, 0.0, 1.0);
}

double device_power_w(const PowerSpec& p, const Activity& a) {
  return p.idle_power_w + (p.max_power_w - p.idle_power_w) * dynamic_fraction(a);
}

double placement_power_w(const PowerSpec& p, const Activity& a, int count, int devices_per_host,
                         double host_idle_power_w) {
  const double host_share = devices_per_host > 0 ? double(count) / double(devices_per_host) : 0.0;
  return device_power_w(p, a) * (double(count) / p.devices_per_figure) + host_share * host_idle_power_w;
}

}  // namespace xpusim
