// Reads a TPU device YAML into TpuSpec. Sources of the constants are in the YAML files; the
// meaning of each field is in the descriptions below (also printed by schema tools).
#include "sim/tpu/tpu_spec.hpp"

#include <cctype>
#include <cmath>
#include <set>
#include <sstream>

#include "common/config_paths.hpp"
#include "common/error.hpp"

namespace xpusim::tpu {

namespace {

std::string positive_d(double v) { return v > 0 ? "" : "must be > 0"; }
std::string non_negative_d(double v) { return v >= 0 ? "" : "must be >= 0"; }
std::string positive_i(long long v) { return v > 0 ? "" : "must be > 0"; }
std::string fraction(double v) { return v > 0 && v <= 1 ? "" : "must be in (0, 1]"; }

// Chip, pod and slice figures of the generation (docs/tpu-generations.md).
void read_generation(SpecReader& r, TpuSpec& s) {
  s.peak_bf16_tflops_per_chip = r.number("peak_bf16_tflops_per_chip", 0.0, "TFLOPS",
                                         "published bf16 peak of one chip (0: not stated; checked against the MXUs)",
                                         non_negative_d);
  s.peak_int8_tops_per_chip = r.number("peak_int8_tops_per_chip", 0.0, "TOPS", "published int8 peak of one chip (0: none)",
                                       non_negative_d);
  s.peak_fp8_tflops_per_chip = r.number("peak_fp8_tflops_per_chip", 0.0, "TFLOPS", "published fp8 peak of one chip (0: no fp8)",
                                        non_negative_d);
  s.cmem_bytes_per_chip = r.integer("cmem_bytes_per_chip", 0ll, "bytes", "common memory (CMEM) per chip (0: none published)",
                                    [](long long v) { return v >= 0 ? "" : "must be >= 0"; });
  const std::string topo = r.text("ici_topology", std::string("torus_2d"), "ICI topology class of a pod",
                                  {"torus_2d", "torus_3d"});
  s.ici_dims = topo == "torus_3d" ? 3 : 2;
  s.pod_chips = static_cast<int>(r.integer("pod_chips", 0ll, "chips", "chips in the largest single slice (0: the board only)",
                                           [](long long v) { return v >= 0 && v <= 1000000 ? "" : "must be in [0, 1000000]"; }));
  s.slice_prefix = r.text("slice_prefix", std::string(""), "accelerator-type prefix of slice names (v5p in v5p-128)");
  const std::string counts = r.text("slice_name_counts", std::string("cores"),
                                    "what the number of a slice name counts (v5p-128: cores; v5litepod-256: chips)",
                                    {"cores", "chips"});
  s.slice_name_counts_cores = counts == "cores";
  s.wraparound_multiple = static_cast<int>(r.integer(
      "wraparound_multiple", 0ll, "chips", "a slice dimension wraps around when its size is a multiple of this (0: never)",
      [](long long v) { return v >= 0 ? "" : "must be >= 0"; }));
  s.host_nic_gbps = r.number("host_nic_gbps", 0.0, "Gbit/s", "data-center network bandwidth of one host (0: not published)",
                             non_negative_d);
  // Large-model planning on slices (parallel/tpu_llm.hpp, docs/tpu-llm.md).
  s.host_link_gbps = r.number("host_link_gbps", 0.0, "GB/s",
                              "host link (PCIe) of one chip, one direction: offloaded activations (0: not stated)",
                              non_negative_d);
  s.dcn_efficiency = r.number("dcn_efficiency", 1.0, "fraction",
                              "sustained / nominal per-chip share of the host NIC in a multislice all-reduce", fraction);
  s.dcn_step_latency_us = r.number("dcn_step_latency_us", 10.0, "us",
                                   "one ring step of a DCN collective between hosts (transfer set-up through the host)",
                                   non_negative_d);
  YAML::Node shapes = r.child("slice_shapes", "slice shapes offered, chips per dimension (\"4x4\", \"4x4x8\")");
  if (shapes && !shapes.IsNull()) {
    if (!shapes.IsSequence()) r.fail("slice_shapes", "must be a list of shapes like \"4x4\"");
    for (const auto& e : shapes) {
      auto bad = [&](const std::string& m) {
        throw UserError(yaml_location(r.file(), e) + ": slice_shapes: " + m);
      };
      if (!e.IsScalar()) bad("each shape is a string like \"4x4\"");
      std::vector<int> dims;
      std::string t = e.Scalar();
      size_t pos = 0;
      while (pos <= t.size()) {
        size_t x = t.find('x', pos);
        std::string part = t.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
        if (part.empty() || part.size() > 6 || part.find_first_not_of("0123456789") != std::string::npos)
          bad("'" + t + "' is not AxB or AxBxC with positive integers");
        dims.push_back(std::stoi(part));
        if (dims.back() < 1) bad("'" + t + "': a dimension must be >= 1");
        if (x == std::string::npos) break;
        pos = x + 1;
      }
      if (static_cast<int>(dims.size()) != s.ici_dims)
        bad("'" + t + "' has " + std::to_string(dims.size()) + " dimensions, the " + topo + " has " +
            std::to_string(s.ici_dims));
      long long chips = 1;
      for (int d : dims) chips *= d;
      if (s.pod_chips > 0 && chips > s.pod_chips)
        bad("'" + t + "' has " + std::to_string(chips) + " chips, more than pod_chips " + std::to_string(s.pod_chips));
      s.slice_shapes.push_back(dims);
    }
  }
}

// derived / secondary / estimated: lists of this file's own keys, so a mark cannot name a field
// that does not exist (a typo would silently mark nothing).
void read_provenance(SpecReader& r, TpuSpec& s) {
  std::set<std::string> keys;
  for (const auto& d : r.docs()) keys.insert(d.key);
  auto list = [&](const char* key, const char* desc, std::vector<std::string>& out) {
    YAML::Node n = r.child(key, desc);
    if (!n || n.IsNull()) return;
    if (!n.IsSequence()) r.fail(key, "must be a list of field names");
    for (const auto& e : n) {
      if (!e.IsScalar() || !keys.count(e.Scalar()))
        throw UserError(yaml_location(r.file(), e) + ": " + key + ": '" + (e.IsScalar() ? e.Scalar() : std::string("?")) +
                        "' is not a field of this file");
      out.push_back(e.Scalar());
    }
  };
  list("derived", "fields computed from other published figures (the YAML comment gives the formula)", s.derived_fields);
  list("secondary", "fields taken from a secondary source (not the vendor or the paper)", s.secondary_fields);
  list("estimated", "fields with no published figure (an estimate, said so in the comment)", s.estimated_fields);
}

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
  s.simulate_board = r.flag("simulate_board", true,
                            "simulate every TensorCore of a placement that fits one board, the all-reduce exchanged "
                            "between them (false: core 0 alone with the ring formula, cheaper for sweeps)");
  s.source = r.text("source", std::nullopt, "where the specs come from");
  read_generation(r, s);
  s.power = read_power_spec(r);  // per TensorCore, for modelled energy (engine/power.hpp)
  read_provenance(r, s);
  r.finish();
  return s;
}

// The stated peak against the MXUs and clock of the same file: a figure copied wrong, or a clock
// derived from the wrong MXU count, shows here. Run on the file alone: a `--set clock_mhz=...`
// describes a hypothetical chip, and the stated peak stays the real chip's published figure.
void check_peak(const YAML::Node& root, const std::string& path, const TpuSpec& s) {
  if (s.peak_bf16_tflops_per_chip <= 0) return;
  const double computed = s.mxu_peak_flops_per_chip() / 1e12;
  if (std::fabs(computed - s.peak_bf16_tflops_per_chip) <= kPeakTolerance * s.peak_bf16_tflops_per_chip) return;
  auto line = [&](const char* k) {
    return std::string(k) + " (line " + std::to_string(root[k].Mark().line + 1) + ")";
  };
  std::ostringstream os;
  os << yaml_location(path, root["peak_bf16_tflops_per_chip"]) << ": peak_bf16_tflops_per_chip: "
     << s.peak_bf16_tflops_per_chip << " TFLOPS contradicts " << line("mxu_count") << " x " << line("mxu_rows")
     << " x " << line("mxu_cols") << " x 2 x " << line("clock_mhz") << " x " << line("cores_per_chip") << " = "
     << computed << " TFLOPS (tolerance " << kPeakTolerance * 100 << "%)";
  throw UserError(os.str());
}

}  // namespace

TpuSpec load_tpu_spec(const std::string& path, const std::vector<std::string>& overrides) {
  YAML::Node root = load_config_yaml(path);
  TpuSpec base = parse(root, path);  // the file alone: errors name file:line
  check_peak(root, path, base);
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
