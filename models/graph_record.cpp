#include "models/graph_record.hpp"

#include "models/training.hpp"
#include "models/work.hpp"

namespace xpusim {

nlohmann::json graph_summary_record(const OpGraph& g, const std::string& model, const GraphOptions& o) {
  nlohmann::json j = graph_totals_json(graph_totals(g));
  j["model"] = model;
  j["batch"] = o.batch;
  j["precision"] = precision_name(o.precision);
  // An inference pass updates nothing: no optimizer to name (graph_totals_json names the task).
  if (o.task == Task::inference) j["task"] = task_name(o.task);
  else j["optimizer"] = optimizer_name(o.training_options.optimizer);
  return j;
}

nlohmann::json graph_op_records(const OpGraph& g, bool all_phases) {
  nlohmann::json ops = nlohmann::json::array();
  for (int i = 0; i < g.num_ops(); ++i) {
    const OpNode& op = g.op(i);
    if (!all_phases && op.phase != Phase::forward) continue;
    nlohmann::json outs = nlohmann::json::array();
    for (int o2 : op.outputs) outs.push_back(g.tensor(o2).desc.shape);
    ops.push_back({{"name", op.name},
                   {"kind", op_kind_name(op.kind)},
                   {"phase", phase_name(op.phase)},
                   {"flops", op.work.flops},
                   {"transcendentals", op.work.transcendentals},
                   {"bytes_read", op.work.bytes_read},
                   {"bytes_written", op.work.bytes_written},
                   {"output_shapes", outs}});
  }
  return ops;
}

}  // namespace xpusim
