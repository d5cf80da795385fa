// How a TPU slice is named as a cluster (issue 32): no configs/clusters/ YAML, a name parser.
// The slice itself (shape, torus, hosts) is the device YAML's (sim/tpu/slice.hpp), so a
// cluster file would only repeat it. Two spellings:
//   <gen>-<N> / <accelerator type>-<N>    v5e-256, v5litepod-256, v5p-256, v6e-256, v4-128:
//       one Cloud TPU slice type (N counts chips on v5e/v6e, TensorCores on v2/v3/v4/v5p);
//       a chip count that is a multiple of the slice joins that many slices over DCN
//   tpu_<gen>_<N>_multislice              tpu_v5e_256_multislice (the reference CSVs' setup):
//       the same slices, data parallel between them over the data-center network
// The device is tpu_<gen> (configs/devices/); docs/tpu-llm.md.
#pragma once
#include <optional>
#include <string>

namespace xpusim::parallel {

struct TpuClusterName {
  std::string device;   // configs/devices/ name: tpu_v5e
  std::string slice;    // the slice type as sim/tpu/slice.hpp parses it: v5e-256
  bool multislice = false;  // the tpu_<gen>_<N>_multislice spelling
};

// The parse when `name` is one of the two spellings and configs/devices/tpu_<gen>.yaml exists;
// nullopt otherwise (a GPU cluster name, a path). The slice number is checked against the
// generation's offered slices later (tpu_slice), so that error names the offered ones.
std::optional<TpuClusterName> parse_tpu_cluster_name(const std::string& name);

}  // namespace xpusim::parallel
