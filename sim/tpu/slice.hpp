// TPU slices, pods and multislice (issue 32): a generation's named slice shapes (`v5e-256` =
// 16x16 chips, `v5p-128` = 64 chips: v2/v3/v4/v5p names count TensorCores, v5e/v6e chips), the
// ICI torus of a slice (wraparound on the dimensions the generation closes, TpuSpec's
// wraparound_multiple), and a chip count split into slices joined over the data-center network.
// Collectives over these are priced in closed form by parallel/torus.hpp.
#pragma once
#include <string>
#include <vector>

#include "parallel/torus.hpp"
#include "sim/tpu/tpu_spec.hpp"

namespace xpusim::tpu {

struct TpuSlice {
  std::string name;           // accelerator type, e.g. "v5litepod-256", "v5p-128"
  std::vector<int> shape;     // chips per dimension
  long long chips = 0, cores = 0, hosts = 0;
  parallel::Torus torus;      // ICI links of the slice
};

struct TpuMultislice {
  TpuSlice slice;
  int slices = 1;
  parallel::Dcn dcn;          // between slices (bandwidth per chip: host NIC / chips per host)
  long long chips() const { return slice.chips * slices; }
};

// "v5e-256", "v5litepod-256" (the spec's slice_prefix or the device name without "tpu_"),
// or a shape "16x16" / "4x4x8". FieldError(field) when the generation does not offer it.
TpuSlice tpu_slice(const TpuSpec& spec, const std::string& name_or_shape, const std::string& field = "slice");
TpuSlice tpu_slice(const TpuSpec& spec, const std::vector<int>& shape, const std::string& field = "slice");

// `chips` chips as one slice or as equal slices over DCN. With `slice` named, chips must be a
// multiple of its chips; without, a count the generation offers as one slice, else a multiple
// of its largest slice. FieldError("count" or "slice") otherwise, naming what is offered.
TpuMultislice tpu_multislice(const TpuSpec& spec, long long chips, const std::string& slice = "");

// The rates that make the core model's ring formula, 2(n-1)/n x bytes / bytes_per_s +
// 2(n-1) x hop_latency_s for n = `cores`, price an all-reduce as the torus and DCN closed form
// does (parallel/torus.hpp) on the slice(s) `m`: the analytical collective of a placement past
// one board, no loop over chips. Its time is linear in the bytes, a x bytes + b, and a chip's
// links carry each of its cores' gradients (a x cores_per_chip). XLA's all-reduce combiner
// merges the step's per-weight gradient all-reduces before they cross the DCN, so the DCN
// ring's per-step latency is paid about once per step: spread over the `all_reduces` of the
// program. The error this adds against the simulated exchange over a board's links is tested
// (tests/unit/test_tpu_ici.cpp) and stated in docs/tpu-model.md.
struct SliceRingRates {
  double bytes_per_s = 1;
  double hop_latency_s = 0;
};
SliceRingRates slice_ring_rates(const TpuSpec& spec, const TpuMultislice& m, int cores, int all_reduces);

// The name the generation gives a slice of `shape` ("v5litepod-256"; "v4-8" for 2x2x1).
std::string tpu_slice_name(const TpuSpec& spec, const std::vector<int>& shape);

// Every slice the generation offers, by name, for error messages and `list`.
std::string tpu_offered_slices(const TpuSpec& spec);

}  // namespace xpusim::tpu
