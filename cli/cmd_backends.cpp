// `xpusim backends`: every engine with whether it is compiled in and can run here.
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "common/output.hpp"
#include "common/records.hpp"
#include "engine/engine.hpp"

namespace xpusim::cli {

void register_backends(CLI::App& app) {
  auto fmt = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("backends", "list engines (real backends and simulators) and whether they can run here");
  add_format_option(*cmd, *fmt, "table|json|csv", "table");
  cmd->callback([fmt] {
    OutputFormat f = parse_output_format(*fmt, {OutputFormat::table, OutputFormat::json, OutputFormat::csv});
    nlohmann::json arr = nlohmann::json::array();
    Table t{{"backend", "compiled", "available", "reason", "description"}};
    bool have_cuda = false;
    for (const auto& e : engine_registry()) {
      auto eng = e.make();
      Availability av = eng->availability();
      have_cuda = have_cuda || e.name == "cuda";
      arr.push_back({{"name", e.name}, {"compiled", av.compiled}, {"available", av.available},
                     {"reason", av.reason}, {"description", eng->description()}});
      t.add({e.name, av.compiled ? "yes" : "no", av.available ? "yes" : "no", av.reason, eng->description()});
    }
    if (!have_cuda) {
      const char* why = "built without CUDA: nvcc was not found when xpusim was configured";
      arr.push_back({{"name", "cuda"}, {"compiled", false}, {"available", false}, {"reason", why},
                     {"description", "NVIDIA GPUs via cuDNN, cuBLAS and NCCL"}});
      t.add({"cuda", "no", "no", why, "NVIDIA GPUs via cuDNN, cuBLAS and NCCL"});
    }
    if (f == OutputFormat::json) print_json_document(std::cout, {{"backends", arr}});
    else if (f == OutputFormat::csv) print_csv_records(std::cout, arr, {"name"});
    else t.print(std::cout, f);
  });
}

}  // namespace xpusim::cli
