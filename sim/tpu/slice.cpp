// Slice names and shapes of a TPU generation, and chip counts split into slices (slice.hpp).
#include "sim/tpu/slice.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace xpusim::tpu {

namespace {

std::string shape_text(const std::vector<int>& s) {
  std::string t;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) t += 'x';  // appended apart: GCC 12 warns (-Wrestrict, falsely) on "x" + to_string
    t += std::to_string(s[i]);
  }
  return t;
}

long long shape_chips(const std::vector<int>& s) {
  long long n = 1;
  for (int d : s) n *= d;
  return n;
}

std::string generation(const TpuSpec& spec) {
  return spec.name.rfind("tpu_", 0) == 0 ? spec.name.substr(4) : spec.name;
}

// Parses "AxB[xC]"; empty when `t` is not a shape.
std::vector<int> parse_shape(const std::string& t) {
  std::vector<int> dims;
  size_t pos = 0;
  while (true) {
    size_t x = t.find('x', pos);
    std::string part = t.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
    if (part.empty() || part.size() > 6 || part.find_first_not_of("0123456789") != std::string::npos) return {};
    dims.push_back(std::stoi(part));
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  return dims.size() >= 2 ? dims : std::vector<int>{};
}

}  // namespace

std::string tpu_slice_name(const TpuSpec& spec, const std::vector<int>& shape) {
  const long long chips = shape_chips(shape);
  const long long n = spec.slice_name_counts_cores ? chips * spec.cores_per_chip : chips;
  return (spec.slice_prefix.empty() ? generation(spec) : spec.slice_prefix) + "-" + std::to_string(n);
}

std::string tpu_offered_slices(const TpuSpec& spec) {
  std::string s;
  for (const auto& sh : spec.slice_shapes) s += (s.empty() ? "" : ", ") + tpu_slice_name(spec, sh) + " (" + shape_text(sh) + ")";
  return s.empty() ? "none (the board only)" : s;
}

TpuSlice tpu_slice(const TpuSpec& spec, const std::vector<int>& shape, const std::string& field) {
  if (std::find(spec.slice_shapes.begin(), spec.slice_shapes.end(), shape) == spec.slice_shapes.end())
    throw FieldError(field, spec.name + " offers no " + shape_text(shape) + " slice; offered: " + tpu_offered_slices(spec));
  TpuSlice s;
  s.shape = shape;
  s.name = tpu_slice_name(spec, shape);
  s.chips = shape_chips(shape);
  s.cores = s.chips * spec.cores_per_chip;
  s.hosts = std::max<long long>(1, (s.chips + spec.chips_per_board - 1) / spec.chips_per_board);
  for (int d : shape) {
    // A dimension of 1 chip has no links; wraparound where the generation closes the ring.
    const bool wrap = d > 2 && spec.wraparound_multiple > 0 && d % spec.wraparound_multiple == 0;
    s.torus.dims.push_back({d, wrap});
  }
  s.torus.link_bytes_per_s = spec.ici_link_bandwidth_gbps * 1e9;
  s.torus.hop_latency_s = spec.ici_latency_us * 1e-6;
  return s;
}

TpuSlice tpu_slice(const TpuSpec& spec, const std::string& name_or_shape, const std::string& field) {
  std::vector<int> shape = parse_shape(name_or_shape);
  if (!shape.empty()) return tpu_slice(spec, shape, field);
  const size_t dash = name_or_shape.rfind('-');
  const std::string prefix = dash == std::string::npos ? "" : name_or_shape.substr(0, dash);
  const std::string num = dash == std::string::npos ? "" : name_or_shape.substr(dash + 1);
  const bool prefix_ok = !prefix.empty() && (prefix == spec.slice_prefix || prefix == generation(spec));
  if (!prefix_ok || num.empty() || num.size() > 9 || num.find_first_not_of("0123456789") != std::string::npos)
    throw FieldError(field, "'" + name_or_shape + "' is not a " + spec.name + " slice (a name like " +
                                (spec.slice_shapes.empty() ? generation(spec) + "-8" : tpu_slice_name(spec, spec.slice_shapes.back())) +
                                " or a shape like " + (spec.ici_dims == 3 ? "4x4x8" : "16x16") + ")");
  const long long n = std::stoll(num);
  for (const auto& sh : spec.slice_shapes)
    if (tpu_slice_name(spec, sh) == prefix + "-" + std::to_string(n) ||
        tpu_slice_name(spec, sh) == (spec.slice_prefix.empty() ? generation(spec) : spec.slice_prefix) + "-" + std::to_string(n))
      return tpu_slice(spec, sh, field);
  throw FieldError(field, spec.name + " offers no slice " + name_or_shape + " (" +
                              (spec.slice_name_counts_cores ? "the number counts TensorCores" : "the number counts chips") +
                              "); offered: " + tpu_offered_slices(spec));
}

TpuMultislice tpu_multislice(const TpuSpec& spec, long long chips, const std::string& slice) {
  if (chips < 1) throw FieldError("count", "must be >= 1 chip, got " + std::to_string(chips));
  TpuMultislice m;
  if (!slice.empty()) {
    m.slice = tpu_slice(spec, slice, "slice");
    if (chips % m.slice.chips != 0)
      throw FieldError("count", std::to_string(chips) + " chips are not a multiple of " + m.slice.name + " (" +
                                    std::to_string(m.slice.chips) + " chips)");
  } else {
    const std::vector<int>* best = nullptr;  // an offered single slice of exactly `chips`
    const std::vector<int>* largest = nullptr;
    for (const auto& sh : spec.slice_shapes) {
      if (shape_chips(sh) == chips && !best) best = &sh;
      if (!largest || shape_chips(sh) > shape_chips(*largest)) largest = &sh;
    }
    if (best) {
      m.slice = tpu_slice(spec, *best, "slice");
    } else if (largest && chips > shape_chips(*largest) && chips % shape_chips(*largest) == 0) {
      m.slice = tpu_slice(spec, *largest, "slice");
    } else {
      throw FieldError("count", std::to_string(chips) + " " + spec.name +
                                    " chips are neither a slice nor a multiple of the largest slice; offered: " +
                                    tpu_offered_slices(spec));
    }
  }
  m.slices = static_cast<int>(chips / m.slice.chips);
  if (m.slices > 1) {
    if (spec.host_nic_gbps <= 0)
      throw FieldError("count", spec.name + " has no data-center network figure (host_nic_gbps), so " +
                                    std::to_string(m.slices) + " slices cannot be joined");
    m.dcn.slices = m.slices;
    const double chips_per_host = std::min<double>(static_cast<double>(spec.chips_per_board), static_cast<double>(m.slice.chips));
    // One set of DCN constants for the SystemC engine and the planner (parallel/tpu_llm): the
    // sustained share of the NIC and the per-ring-step latency, fitted on the MaxText v5e rows
    // (device YAML dcn_efficiency, dcn_step_latency_us; docs/tpu-llm.md).
    m.dcn.bytes_per_s_per_chip = spec.host_nic_gbps * 1e9 / 8 / chips_per_host * spec.dcn_efficiency;
    m.dcn.latency_s = spec.dcn_step_latency_us * 1e-6;
  }
  return m;
}

SliceRingRates slice_ring_rates(const TpuSpec& spec, const TpuMultislice& m, int cores, int all_reduces) {
  const parallel::MultisliceTime unit = parallel::multislice_all_reduce(m.slice.torus, m.dcn, 1.0);
  const double a = (unit.ici.bandwidth_s + unit.dcn.bandwidth_s) * spec.cores_per_chip;
  const double b = unit.ici.latency_s + unit.dcn.latency_s / std::max(1, all_reduces);
  const double n = cores;
  SliceRingRates r;
  if (a > 0 && n > 1) r.bytes_per_s = 2 * (n - 1) / n / a;
  if (n > 1) r.hop_latency_s = b / (2 * (n - 1));
  return r;
}

}  // namespace xpusim::tpu
