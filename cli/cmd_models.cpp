// `xpusim models`: the zoo with parameter counts and forward GFLOPs per sample.
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "common/output.hpp"
#include "common/records.hpp"
#include "models/work.hpp"
#include "models/zoo.hpp"

namespace xpusim::cli {

void register_models(CLI::App& app) {
  auto fmt = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("models", "list the model zoo (configs/models/) with params and GFLOPs per sample");
  add_format_option(*cmd, *fmt, "table|json|csv|markdown", "table");
  cmd->callback([fmt] {
    OutputFormat f = parse_output_format(
        *fmt, {OutputFormat::table, OutputFormat::json, OutputFormat::csv, OutputFormat::markdown});
    auto zoo = load_zoo();
    nlohmann::json arr = nlohmann::json::array();
    Table t{{"model", "family", "dataset", "input", "classes", "params", "head_params", "gflops_forward_per_sample",
             "reference_params", "description"}};
    for (const auto& m : zoo) {
      GraphOptions o;
      o.batch = 1;
      o.training = false;
      OpGraph g = build_graph(m, o);
      GraphTotals tot = graph_totals(g);
      std::string input;
      for (size_t i = 0; i < m.input.size(); ++i) input += (i ? "x" : "") + std::to_string(m.input[i]);
      t.add({m.name, m.family, m.dataset, input, std::to_string(m.classes), fmt_int(tot.params), fmt_int(tot.head_params),
             fmt_fixed(tot.flops_forward / 1e9, 4), m.reference_params ? fmt_int(*m.reference_params) : "",
             m.description});
      arr.push_back({{"model", m.name},
                     {"family", m.family},
                     {"dataset", m.dataset},
                     {"input", m.input},
                     {"classes", m.classes},
                     {"params", tot.params},
                     {"head_params", tot.head_params},
                     {"flops_forward_per_sample", tot.flops_forward},
                     {"reference_params", m.reference_params ? nlohmann::json(*m.reference_params) : nlohmann::json()},
                     {"description", m.description}});
    }
    if (f == OutputFormat::json) print_json_document(std::cout, {{"models", arr}});
    else if (f == OutputFormat::csv) print_csv_records(std::cout, arr, {"model"});
    else t.print(std::cout, f);
  });
}

}  // namespace xpusim::cli
