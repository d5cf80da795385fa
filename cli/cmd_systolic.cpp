// `xpusim systolic`: SCALE-Sim-compatible compute cycles per layer of a topology CSV on one
// R x C systolic array (sim/tpu/scalesim.hpp), or of a zoo model's convolutions and dense
// layers (--model), optionally written out as a topology CSV (--write-topology). The document
// is built by sim/tpu/scalesim_document.hpp (shared with Python's xpusim.systolic).
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "common/checked_io.hpp"
#include "common/error.hpp"
#include "common/output.hpp"
#include "common/records.hpp"
#include "sim/tpu/scalesim.hpp"
#include "sim/tpu/scalesim_document.hpp"

namespace xpusim::cli {

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
    std::vector<tpu::TopologyLayer> layers = topo->empty() ? tpu::topology_of_model(*model) : tpu::read_topology_csv(*topo);
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
    const nlohmann::json doc = tpu::systolic_document(layers, rows, cols, *df);
    if (f == OutputFormat::csv) {  // one row per layer; the totals are in the JSON and the table
      print_csv_records(std::cout, doc["layers"], {"layer"});
    } else if (f == OutputFormat::json) {
      print_json_document(std::cout, doc);
    } else {
      Table t({"layer", "cycles", "utilization", "folds", "macs"});
      for (const auto& l : doc["layers"])
        t.add({l["layer"].get<std::string>(), std::to_string(l["cycles"].get<long long>()),
               fmt_fixed(l["utilization"].get<double>(), 4), std::to_string(l["folds"].get<long long>()),
               fmt_fixed(l["macs"].get<double>(), 0)});
      t.add({"total", std::to_string(doc["total_cycles"].get<long long>()),
             fmt_fixed(doc["total_utilization"].get<double>(), 4), "", fmt_fixed(doc["total_macs"].get<double>(), 0)});
      t.print(std::cout, f);
    }
  });
}

}  // namespace xpusim::cli
