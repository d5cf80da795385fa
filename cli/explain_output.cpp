// `predict --explain` output (see explain_output.hpp).
#include "cli/explain_output.hpp"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace xpusim::cli {

void print_explain(std::ostream& os, const std::vector<analytical::OpExplain>& ops, OutputFormat f) {
  analytical::OpExplain total;
  for (const auto& o : ops) {
    total.time_s += o.time_s, total.math_s += o.math_s, total.memory_s += o.memory_s, total.launch_s += o.launch_s;
  }
  if (f == OutputFormat::json) {
    nlohmann::ordered_json j;
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (const auto& o : ops) {
      nlohmann::ordered_json e;
      e["name"] = o.name;
      e["kind"] = o.kind;
      e["class"] = o.op_class;
      e["time_s"] = o.time_s;
      e["math_s"] = o.math_s;
      e["memory_s"] = o.memory_s;
      e["launch_s"] = o.launch_s;
      if (o.waves > 0) {
        e["tile_m"] = o.tile_m;
        e["tile_n"] = o.tile_n;
        e["waves"] = o.waves;
        e["wave_efficiency"] = o.wave_efficiency;
      }
      if (o.unaligned) e["unaligned"] = true;
      arr.push_back(e);
    }
    j["ops"] = arr;
    j["totals"] = {{"time_s", total.time_s}, {"math_s", total.math_s}, {"memory_s", total.memory_s},
                   {"launch_s", total.launch_s}};
    os << j.dump(2) << "\n";
    return;
  }
  if (f == OutputFormat::csv) {
    os << "name,kind,class,time_s,math_s,memory_s,launch_s,tile_m,tile_n,waves,wave_efficiency,unaligned\n";
    for (const auto& o : ops) {
      char b[256];
      std::snprintf(b, sizeof b, ",%s,%s,%.9g,%.9g,%.9g,%.9g,%g,%g,%g,%.6g,%d\n", o.kind.c_str(), o.op_class.c_str(),
                    o.time_s, o.math_s, o.memory_s, o.launch_s, o.tile_m, o.tile_n, o.waves, o.wave_efficiency,
                    o.unaligned ? 1 : 0);
      os << (o.name.find(',') == std::string::npos ? o.name : "\"" + o.name + "\"") << b;
    }
    return;
  }
  std::vector<const analytical::OpExplain*> top;
  for (const auto& o : ops) top.push_back(&o);
  std::stable_sort(top.begin(), top.end(), [](auto* a, auto* b) { return a->time_s > b->time_s; });
  if (top.size() > 25) top.resize(25);
  char b[320];
  std::snprintf(b, sizeof b, "%-40s %-24s %9s %9s %9s %9s %9s %6s %8s\n", "op (25 costliest)", "kind", "time_us",
                "math_us", "memory_us", "launch_us", "tile", "waves", "wave_eff");
  os << b;
  for (const auto* o : top) {
    char tile[32] = "-";
    if (o->waves > 0) std::snprintf(tile, sizeof tile, "%gx%g%s", o->tile_m, o->tile_n, o->unaligned ? "u" : "");
    std::snprintf(b, sizeof b, "%-40.40s %-24.24s %9.1f %9.1f %9.1f %9.1f %9s %6.0f %8.2f\n", o->name.c_str(),
                  o->kind.c_str(), o->time_s * 1e6, o->math_s * 1e6, o->memory_s * 1e6, o->launch_s * 1e6, tile,
                  o->waves, o->wave_efficiency);
    os << b;
  }
  std::snprintf(b, sizeof b, "%-40s %-24s %9.1f %9.1f %9.1f %9.1f  (%zu ops; step time adds communication and host)\n",
                "total", "", total.time_s * 1e6, total.math_s * 1e6, total.memory_s * 1e6, total.launch_s * 1e6,
                ops.size());
  os << b;
  if (std::any_of(ops.begin(), ops.end(), [](const auto& o) { return o.unaligned; }))
    os << "u: a leading dimension is not a multiple of 16 bytes (8 fp16/bf16 elements): unaligned GEMM kernels; "
          "pad it (a vocabulary to a multiple of 8, or a profile's gemm_dims_padded_to)\n";
}

}  // namespace xpusim::cli
