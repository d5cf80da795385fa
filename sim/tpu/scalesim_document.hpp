// The systolic-array report (`xpusim systolic --format json`, Python's xpusim.systolic): the
// layers of a SCALE-Sim topology CSV or of a zoo model's forward convolutions and dense layers,
// each priced by scalesim_layer on one R x C array, with the totals. Shared by cli/ and
// python/ so both print the same fields.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/tpu/scalesim.hpp"

namespace xpusim::tpu {

// Forward convolutions and dense layers of a model at batch 1, as SCALE-Sim layers
// (FieldError("model") when it has none).
std::vector<TopologyLayer> topology_of_model(const std::string& model);

// The document body: array_rows, array_cols, dataflow, layers (layer, cycles, utilization,
// folds, sr, sc, t, macs) and total_cycles, total_utilization, total_macs. rows/cols: the
// array's PEs (FieldError("array") outside [1, kMaxArrayDim]); dataflow: ws | os | is
// (FieldError("dataflow")).
nlohmann::json systolic_document(const std::vector<TopologyLayer>& layers, int64_t rows, int64_t cols,
                                 const std::string& dataflow);

}  // namespace xpusim::tpu
