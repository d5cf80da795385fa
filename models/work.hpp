// Work counting: FLOPs, transcendentals and bytes per op, counted once on the graph.
// Engines never recount; they turn Work into time with their own rates.
// Conventions (docs/op-graph.md): a multiply-add is 2 FLOPs; bytes are the sizes of the
// tensors an op reads and writes (no cache model); views (reshape) move no bytes.
#pragma once
#include <nlohmann/json.hpp>

#include "models/graph.hpp"

namespace xpusim {

Work count_work(const OpGraph& g, const OpNode& op);
// Fills op.work for every op.
void count_all_work(OpGraph& g);

struct GraphTotals {
  int64_t params = 0;               // trainable parameters
  int64_t head_params = 0;          // of which in the task head (weights named head.*), e.g. BERT's classifier
  double flops_forward = 0;         // forward ops only
  double flops_backward = 0;
  double flops_update = 0;
  double flops_train_step = 0;      // everything
  double transcendentals = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  int64_t weight_bytes = 0;          // fp32 master weights
  int64_t weight_grad_bytes = 0;
  int64_t optimizer_state_bytes = 0;
  int64_t low_precision_weight_bytes = 0;  // bf16/fp16 weight copy under mixed precision
  int64_t activation_bytes = 0;      // forward tensors kept for the backward pass
  int64_t input_bytes = 0;           // one batch as fed by the host
  int64_t peak_bytes = 0;            // persistent + peak of live tensors over the schedule
  int num_ops = 0;
};

GraphTotals graph_totals(const OpGraph& g);
// The totals under their stable JSON names (units in the names), for `graph --totals` and the
// Python module.
nlohmann::json graph_totals_json(const GraphTotals& t);

}  // namespace xpusim
