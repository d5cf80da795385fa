// The large-model planner's entry point (`xpusim plan`, and validation rows whose setup is a
// cluster): a decoder from the zoo (ModelSpec::llm), a cluster (configs/clusters/), a device
// of it, a framework profile (its kernel-efficiency scales and its attention / dropout recipe)
// and a precision become the closed-form job, kernel pricer and network of parallel/llm_*.hpp,
// then every valid configuration is ranked (or the fixed ones priced). The kernel pricer is
// the analytical GPU model's (tile and wave GEMM pricing, per-dtype tensor rates and the
// architecture's efficiencies): no second set of device constants.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/model_spec.hpp"
#include "parallel/cluster.hpp"
#include "parallel/llm_search.hpp"

namespace xpusim {

struct LlmPlanRequest {
  std::string model;                  // a zoo decoder (ModelSpec::llm) or its YAML
  std::optional<LlmShape> shape;      // set: this shape instead of the model's (`model` is its label)
  std::string cluster;                // configs/clusters/ name or path
  std::string device;                 // empty = the cluster's default device
  std::string framework;              // profile or a name it lists (llm-foundry, megatron-lm); empty = neutral
  std::vector<std::string> overrides; // KEY=VALUE on the device, framework.KEY=VALUE, cluster.KEY=VALUE
  int gpus = 8;
  int64_t global_batch = 0;           // sequences per step
  int64_t seq_len = 0;                // 0 = the model's learned positions (required for rotary models)
  std::string precision = "mixed_bf16";  // mixed_bf16 | mixed_fp16 | bf16 | fp16 | fp8
  parallel::LlmConstraints fixed;
  bool tp_across_nodes = false;
  bool offload_activations = false;   // recompute selective_offloaded: priced by the TPU planner only
  int keep = 0;                       // ranked configurations kept (0 = all)
};

struct LlmPlanResult {
  std::string model, cluster, device, framework, precision;
  int64_t parameters = 0;             // exact, llm_parameter_count
  int gpus = 0, nodes = 0;
  int devices_per_node = 0;           // the cluster's (what an offer must hold together)
  int64_t seq_len = 0, global_batch = 0;
  double memory_bytes = 0;            // usable per GPU
  double peak_flops_s = 0;            // per GPU, dense 16-bit tensor peak
  parallel::LlmSearchResult search;
};

// The checks of a request (bad input is a FieldError naming the field: model, cluster,
// device, gpus, global_batch, seq_len, precision, tp, pp, ...).
LlmPlanResult plan_llm(const LlmPlanRequest& r);
// The decoder a plan request names (r.shape when given, else the zoo model); a FieldError
// naming `model` when it has no llm shape. Both planners (GPU, TPU) start from it.
ModelSpec llm_model_of(const LlmPlanRequest& r);

}  // namespace xpusim
