// The records of `xpusim graph` and the Python module's graph(): one source, so the CLI's
// JSON/CSV and the Python dict carry the same field names (docs/outputs.md).
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "models/zoo.hpp"

namespace xpusim {

// The totals of `g` (graph_totals_json) with model, batch, precision, and the optimizer
// (training) or the task (inference): the one-row `graph --totals` record.
nlohmann::json graph_summary_record(const OpGraph& g, const std::string& model, const GraphOptions& o);
// One record per op: the forward ops, or every op of the step when `all_phases`.
nlohmann::json graph_op_records(const OpGraph& g, bool all_phases);

}  // namespace xpusim
