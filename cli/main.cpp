// xpusim: the command-line entry point. The only place that turns errors into exit codes:
// UserError (bad input) -> 2, UnavailableError (cannot run here) -> 3, anything else -> 1.
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.hpp"
#include "common/error.hpp"
#include "common/config_paths.hpp"
#include "common/version.hpp"
#include "engine/engine.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "xpusim: accelerator simulator and cost model for ML training.\n"
      "Which hardware trains my model fastest and cheapest, and can I trust the answer?"};
  app.require_subcommand(1);
  // Version, commit and the engines this build has (from the registry: cuda only when built).
  app.set_version_flag("--version", [] {
    std::string engines;
    for (const auto& e : xpusim::engine_registry()) engines += (engines.empty() ? "" : ", ") + e.name;
    return std::string("xpusim ") + xpusim::xpusim_version() + " (" + xpusim::xpusim_git_hash() + ")\nengines: " +
           engines;
  });
  app.set_help_all_flag("--help-all", "help for every command");
  std::string config_dir;
  app.add_option("--config-dir", config_dir, "configuration root (default: $XPUSIM_CONFIG_DIR, else share/xpusim/configs beside an installed binary, else the source tree's configs/)")
      ->each([](const std::string& d) { xpusim::set_config_dir(d); });
  xpusim::cli::register_all(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  } catch (const xpusim::FieldError& e) {
    std::cerr << "xpusim: error: " << xpusim::cli::flag_for_field(e.field()) << ": " << e.message() << "\n";
    return 2;
  } catch (const xpusim::UserError& e) {
    std::cerr << "xpusim: error: " << e.what() << "\n";
    return 2;
  } catch (const xpusim::UnavailableError& e) {
    std::cerr << "xpusim: unavailable: " << e.what() << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "xpusim: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
