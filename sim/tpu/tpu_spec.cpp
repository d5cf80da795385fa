// Reads a TPU device YAML into TpuSpec. Sources of the constants are in the YAML files; the
// meaning of each field is in the descriptions below (also printed by schema tools).
#include "sim/tpu/tpu_spec.hpp"

#include <cctype>

#include "common/config_paths.hpp"
#include "common/error.hpp"

namespace xpusim::tpu {

namespace {

std::string positive_d(double v) { return v > 0 ? "" : "must be > 0"; }
std::string non_negative_d(double v) { return v >= 0 ? "" : "must be >= 0"; }
std::string positive_i(long long v) { return v > 0 ? "" : "must be > 0"; }
std::string fraction(double v) { return v > 0 && v <= 1 ? "" : "must be in (0, 1]"; }

TpuSpec parse(const YAML::Node& root, const std::string& path) {
  SpecReader r(root, path);
  TpuSpec s;
  s.file = path;
  s.name = r.text("name", std::nullopt, "device name, as a request's device field gives it");
  r.text("engine", std::nullopt, "engine that simulates this device", {"tpu_systemc"});
  s.description = r.text("description", std::string(""), "one line");
  s.default_system = r.text("default_system", std::nullopt, "system used when a request names none");
  // Bounded: the simulator counts time in integer cycles, and a clock of 1e-20 MHz made the
  // step *faster* (wrapped cycle counts). 1 MHz .. 100 GHz covers any real chip.
  s.clock_mhz = r.number("clock_mhz", std::nullopt, "MHz", "TensorCore clock (1 to 100000)",
                         [](double v) { return v >= 1 && v <= 1e5 ? "" : "must be in [1, 100000] MHz"; });
  s.mxu_count = static_cast<int>(r.integer("mxu_count", std::nullopt, "units", "matrix units per core", positive_i));
  auto array_dim = [](long long v) { return v >= 2 && v <= 4096 ? "" : "must be in [2, 4096]"; };
  s.mxu_rows = static_cast<int>(r.integer("mxu_rows", std::nullopt, "PEs", "systolic array rows (contraction)", array_dim));
  s.mxu_cols = static_cast<int>(r.integer("mxu_cols", std::nullopt, "PEs", "systolic array columns (outputs)", array_dim));
  s.vector_lanes = static_cast<int>(r.integer("vector_lanes", std::nullopt, "lanes", "vector unit lanes", positive_i));
  s.vector_sublanes = static_cast<int>(r.integer("vector_sublanes", std::nullopt, "sublanes", "sublanes per lane", positive_i));
  s.vector_alus = static_cast<int>(r.integer("vector_alus", std::nullopt, "slots", "vector ALU slots per VLIW bundle", positive_i));
  s.transcendental_per_cycle = r.number("transcendental_per_cycle", std::nullopt, "results/cycle",
                                        "exp/log/rsqrt/tanh results per cycle", positive_d);
  s.vector_memory_bytes = r.integer("vector_memory_bytes", std::nullopt, "bytes", "vector memory (VMEM) per core", positive_i);
  s.hbm_capacity_bytes = r.integer("hbm_capacity_bytes", std::nullopt, "bytes", "HBM per core", positive_i);
  s.hbm_bandwidth_gbps = r.number("hbm_bandwidth_gbps", std::nullopt, "GB/s", "peak HBM bandwidth per core", positive_d);
  s.hbm_latency_ns = r.number("hbm_latency_ns", std::nullopt, "ns", "HBM access latency seen by a DMA", non_negative_d);
  s.dma_engines = static_cast<int>(r.integer("dma_engines", std::nullopt, "engines",
                                             "DMA engines per core (>= 2: one inbound, one outbound queue)",
                                             [](long long v) { return v >= 2 ? "" : "must be >= 2"; }));
  s.dma_burst_bytes = r.integer("dma_burst_bytes", 1ll << 20, "bytes",
                                "granularity at which DMA queues share the HBM channel (simulation)", positive_i);
  s.cores_per_chip = static_cast<int>(r.integer("cores_per_chip", std::nullopt, "cores", "TensorCores per chip", positive_i));
  s.chips_per_board = static_cast<int>(r.integer("chips_per_board", std::nullopt, "chips", "chips per board", positive_i));
  s.ici_links_per_chip = static_cast<int>(r.integer("ici_links_per_chip", std::nullopt, "links", "ICI links per chip", positive_i));
  s.ici_link_bandwidth_gbps = r.number("ici_link_bandwidth_gbps", std::nullopt, "GB/s", "ICI link bandwidth, one direction", positive_d);
  s.ici_latency_us = r.number("ici_latency_us", std::nullopt, "us", "ICI latency per hop", non_negative_d);
  s.hbm_efficiency = r.number("hbm_efficiency", std::nullopt, "fraction", "sustained / peak HBM bandwidth", fraction);
  s.op_overhead_us = r.number("op_overhead_us", std::nullopt, "us", "sequencer cost per fused op", non_negative_d);
  s.runtime_reserved_bytes = r.number("runtime_reserved_bytes", 0.0, "bytes", "HBM kept by the runtime", non_negative_d);
  s.prefetch_depth_batches = static_cast<int>(r.integer("prefetch_depth_batches", std::nullopt, "batches",
                                                        "host infeed queue depth", positive_i));
  s.collectives_async = r.flag("collectives_async", std::nullopt,
                                "all-reduce runs asynchronously, overlapping later ops (else in program order)");
  s.source = r.text("source", std::nullopt, "where the specs come from");
  s.power = read_power_spec(r);  // per TensorCore, for modelled energy (engine/power.hpp)
  r.finish();
  return s;
}

}  // namespace

TpuSpec load_tpu_spec(const std::string& path, const std::vector<std::string>& overrides) {
  YAML::Node root = load_config_yaml(path);
  TpuSpec base = parse(root, path);  // the file alone: errors name file:line
  if (overrides.empty()) return base;
  // Validate each override on its own so the error names the offending --set.
  for (const auto& o : overrides) {
    YAML::Node n = YAML::Clone(root);
    apply_overrides(n, {o});
    try {
      parse(n, path);
    } catch (const UserError& e) {
      // The value came from the command line, not from a line of the file: drop "file:line: ".
      std::string msg = e.what();
      if (msg.rfind(path + ":", 0) == 0) {
        size_t i = path.size() + 1, digits = i;
        while (digits < msg.size() && std::isdigit(static_cast<unsigned char>(msg[digits]))) ++digits;
        if (digits > i && msg.compare(digits, 2, ": ") == 0) msg = msg.substr(digits + 2);
        else if (msg.compare(path.size(), 2, ": ") == 0) msg = msg.substr(path.size() + 2);
      }
      throw FieldError("set", o + ": " + msg);
    }
  }
  YAML::Node n = YAML::Clone(root);
  apply_overrides(n, overrides);
  try {
    return parse(n, path);
  } catch (const UserError& e) {
    throw FieldError("set", std::string(e.what()));
  }
}

}  // namespace xpusim::tpu
