#include "cli/commands.hpp"

#include <map>

namespace xpusim::cli {

namespace {
std::map<std::string, std::string>& field_aliases() {
  static std::map<std::string, std::string> m;
  return m;
}
}  // namespace

void alias_field_flag(const std::string& field, const std::string& flag) { field_aliases()[field] = flag; }

std::string flag_for_field(const std::string& field) {
  auto it = field_aliases().find(field);
  if (it != field_aliases().end()) return it->second;
  std::string flag = "--" + field;
  for (char& c : flag)
    if (c == '_') c = '-';
  return flag;
}

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
  register_sweep(app);
}

void add_format_option(CLI::App& cmd, std::string& target, const std::string& choices, const std::string& def) {
  target = def;
  cmd.add_option("--format", target, "output format: " + choices)->capture_default_str();
}

}  // namespace xpusim::cli
