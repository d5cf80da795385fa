// `xpusim systolic`: SCALE-Sim-compatible compute cycles per layer of a topology CSV on one
// R x C systolic array (sim/tpu/scalesim.hpp), or of a zoo model's convolutions and dense
// layers (--model), optionally written out as a topology CSV (--write-topology).
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "common/checked_io.hpp"
#include "common/error.hpp"
#include "common/output.hpp"
#include "common/records.hpp"
#include "models/zoo.hpp"
#include "sim/tpu/scalesim.hpp"

namespace xpusim::cli {

namespace {

// Forward convolutions and dense layers of a model at batch 1, as SCALE-Sim layers. SCALE-Sim
// has no padding and computes OFMAP = ceil((H - F + S) / S), so the IFMAP is given as the
// extent the convolution actually reads, (OFMAP - 1) x S + F (the padded input, less any
// rows a strided window never reaches); SCALE-Sim's OFMAP then equals the graph's.
std::vector<tpu::TopologyLayer> topology_of_model(const std::string& model) {
  GraphOptions o;
  o.batch = 1;
  o.training = false;
  OpGraph g = build_graph(find_model(model), o);
  std::vector<tpu::TopologyLayer> out;
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
  if (out.empty()) throw UserError("--model: " + model + " has no convolution or dense layer");
  return out;
}

}  // namespace

void register_systolic(CLI::App& app) {
  auto topo = std::make_shared<std::string>();
  auto model = std::make_shared<std::string>();
  auto write = std::make_shared<std::string>();
  auto array = std::make_shared<std::string>("128x128");
  auto df = std::make_shared<std::string>("ws");
  auto fmt = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("systolic", "SCALE-Sim-compatible cycles per layer on one systolic array");
  cmd->add_option("--topology", *topo, "SCALE-Sim topology CSV");
  cmd->add_option("--model", *model, "use a zoo model's forward conv/dense layers (batch 1) instead of a CSV");
  cmd->add_option("--write-topology", *write, "with --model: write the layers as a SCALE-Sim topology CSV");
  cmd->add_option("--array", *array, "array size RxC")->capture_default_str();
  cmd->add_option("--dataflow", *df, "ws|os|is")->capture_default_str();
  add_format_option(*cmd, *fmt, "table|json|csv", "table");
  cmd->callback([=] {
    OutputFormat f = parse_output_format(*fmt, {OutputFormat::table, OutputFormat::json, OutputFormat::csv});
    tpu::Dataflow d;
    if (!tpu::parse_dataflow(*df, d)) throw UserError("--dataflow: '" + *df + "' is not ws, os or is");
    long long rows = 0, cols = 0;
    {
      auto x = array->find('x');
      size_t u1 = 0, u2 = 0;
      try {
        if (x != std::string::npos) {
          rows = std::stoll(array->substr(0, x), &u1);
          cols = std::stoll(array->substr(x + 1), &u2);
        }
      } catch (const std::exception&) {
        rows = 0;
      }
      if (x == std::string::npos || u1 != x || u2 != array->size() - x - 1 || rows < 1 || cols < 1)
        throw UserError("--array: expected RxC with positive integers, e.g. 128x128, got '" + *array + "'");
      if (rows > tpu::kMaxArrayDim || cols > tpu::kMaxArrayDim)
        throw UserError("--array: rows and columns must be at most " + std::to_string(tpu::kMaxArrayDim) + ", got '" +
                        *array + "'");
    }
    if (topo->empty() == model->empty()) throw UserError("--topology: give exactly one of --topology or --model");
    if (!write->empty() && model->empty()) throw UserError("--write-topology: needs --model");
    std::vector<tpu::TopologyLayer> layers = topo->empty() ? topology_of_model(*model) : tpu::read_topology_csv(*topo);
    if (!write->empty()) {
      write_file_checked(
          *write,
          [&](std::ostream& out) {
            out << "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n";
            for (const auto& l : layers)
              out << l.name << ", " << l.ifmap_h << ", " << l.ifmap_w << ", " << l.filter_h << ", " << l.filter_w
                  << ", " << l.channels << ", " << l.filters << ", " << l.stride << ",\n";
          },
          "--write-topology");
    }
    Table t({"layer", "cycles", "utilization", "folds", "macs"});
    nlohmann::json arr = nlohmann::json::array();
    long long total = 0;
    double macs = 0;
    for (const auto& l : layers) {
      tpu::LayerCycles c = tpu::scalesim_layer(l, rows, cols, d);
      total = checked_add(total, c.cycles, "total cycles");
      macs += c.macs;
      t.add({c.name, std::to_string(c.cycles), fmt_fixed(c.utilization, 4), std::to_string(c.folds), fmt_fixed(c.macs, 0)});
      arr.push_back({{"layer", c.name}, {"cycles", c.cycles}, {"utilization", c.utilization},
                     {"folds", c.folds}, {"sr", c.sr}, {"sc", c.sc}, {"t", c.t}, {"macs", c.macs}});
    }
    double util = macs / (static_cast<double>(rows) * cols * static_cast<double>(total));
    t.add({"total", std::to_string(total), fmt_fixed(util, 4), "", fmt_fixed(macs, 0)});
    if (f == OutputFormat::csv)  // one row per layer; the totals are in the JSON and the table
      print_csv_records(std::cout, arr, {"layer"});
    else if (f == OutputFormat::json)
      print_json_document(std::cout, {{"array_rows", rows}, {"array_cols", cols}, {"dataflow", *df}, {"layers", arr},
                             {"total_cycles", total}, {"total_utilization", util}, {"total_macs", macs}});
    else
      t.print(std::cout, f);
  });
}

}  // namespace xpusim::cli
