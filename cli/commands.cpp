#include "cli/commands.hpp"

namespace xpusim::cli {

void register_all(CLI::App& app) {
  register_models(app);
  register_graph(app);
  register_backends(app);
  register_predict(app);
  register_run(app);
  register_validate(app);
  register_calibrate(app);
  register_systolic(app);
  register_compare(app);
  register_train(app);
}

void add_format_option(CLI::App& cmd, std::string& target, const std::string& choices, const std::string& def) {
  target = def;
  cmd.add_option("--format", target, "output format: " + choices)->capture_default_str();
}

}  // namespace xpusim::cli
