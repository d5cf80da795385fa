// The systolic-array report (scalesim_document.hpp), moved from cli/cmd_systolic.cpp so that
// Python's xpusim.systolic returns the CLI's document.
#include "sim/tpu/scalesim_document.hpp"

#include "common/checked_io.hpp"
#include "common/error.hpp"
#include "models/zoo.hpp"

namespace xpusim::tpu {

// SCALE-Sim has no padding and computes OFMAP = ceil((H - F + S) / S), so the IFMAP is given as
// the extent the convolution actually reads, (OFMAP - 1) x S + F (the padded input, less any
// rows a strided window never reaches); SCALE-Sim's OFMAP then equals the graph's.
std::vector<TopologyLayer> topology_of_model(const std::string& model) {
  GraphOptions o;
  o.batch = 1;
  o.training = false;
  OpGraph g = build_graph(find_model(model), o);
  std::vector<TopologyLayer> out;
  for (int i : g.schedule()) {
    const OpNode& op = g.op(i);
    if (op.kind == OpKind::Conv2D) {
      const Shape& x = g.tensor(op.inputs[0]).desc.shape;
      const Shape& y = g.tensor(op.outputs[0]).desc.shape;
      const OpAttrs& a = op.attrs;
      if (a.groups != 1 || a.stride_h != a.stride_w) continue;  // not expressible in the CSV
      out.push_back({op.name, (y[2] - 1) * a.stride_h + a.kernel_h, (y[3] - 1) * a.stride_w + a.kernel_w, a.kernel_h,
                     a.kernel_w, x[1], y[1], a.stride_h});
    } else if (op.kind == OpKind::MatMul) {
      out.push_back({op.name, 1, 1, 1, 1, op.attrs.k, op.attrs.n, 1});
    }
  }
  if (out.empty()) throw FieldError("model", model + " has no convolution or dense layer");
  return out;
}

nlohmann::json systolic_document(const std::vector<TopologyLayer>& layers, int64_t rows, int64_t cols,
                                 const std::string& dataflow) {
  Dataflow d;
  if (!parse_dataflow(dataflow, d)) throw FieldError("dataflow", "'" + dataflow + "' is not ws, os or is");
  if (rows < 1 || cols < 1 || rows > kMaxArrayDim || cols > kMaxArrayDim)
    throw FieldError("array", "rows and columns must be in [1, " + std::to_string(kMaxArrayDim) + "], got " +
                                  std::to_string(rows) + "x" + std::to_string(cols));
  nlohmann::json arr = nlohmann::json::array();
  long long total = 0;
  double macs = 0;
  for (const auto& l : layers) {
    LayerCycles c = scalesim_layer(l, rows, cols, d);
    total = checked_add(total, c.cycles, "total cycles");
    macs += c.macs;
    arr.push_back({{"layer", c.name}, {"cycles", c.cycles}, {"utilization", c.utilization},
                   {"folds", c.folds}, {"sr", c.sr}, {"sc", c.sc}, {"t", c.t}, {"macs", c.macs}});
  }
  const double util = macs / (static_cast<double>(rows) * cols * static_cast<double>(total));
  return {{"array_rows", rows}, {"array_cols", cols}, {"dataflow", dataflow}, {"layers", arr},
          {"total_cycles", total}, {"total_utilization", util}, {"total_macs", macs}};
}

}  // namespace xpusim::tpu
