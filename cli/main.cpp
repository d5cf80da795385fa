// xpusim: the command-line entry point. The only place that turns errors into exit codes:
// UserError (bad input) -> 2, UnavailableError (cannot run here) -> 3, InterruptedError
// (Ctrl-C after a partial summary) -> 130, anything else -> 1.
// Also checks what every command shares: arguments are UTF-8 (they can reach JSON output),
// the subcommand exists, and stdout took every byte written to it.
#include <CLI/CLI.hpp>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli/commands.hpp"
#include "common/checked_io.hpp"
#include "common/config_paths.hpp"
#include "common/suggest.hpp"
#include "common/version.hpp"
#include "costmodel/pricing.hpp"
#include "engine/engine.hpp"
#include "common/error.hpp"

namespace {

// CLI11 reports an unknown subcommand as "A subcommand is required"; name it and list the
// valid ones instead. The first word that is neither an option nor the value of a global
// option (--config-dir, --catalog, --catalog-region) is the subcommand.
void check_subcommand(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--config-dir" || a == "--catalog" || a == "--catalog-region") {  // global options with a value
      ++i;
      continue;
    }
    if (a.empty() || a[0] == '-') continue;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
      if (sub->get_name() == a) return;
    std::string list;
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
      list += (list.empty() ? "" : ", ") + sub->get_name();
      names.push_back(sub->get_name());
    }
    std::string hint = xpusim::did_you_mean(a, names);
    throw xpusim::UserError("unknown command '" + a + "'" + (hint.empty() ? "" : "; " + hint) + " (commands: " + list + ")");
  }
}

// An empty path given to an option that names a file or directory ('--trace ""', a variable
// that was not set) was taken as "not given" and the output silently skipped.
void check_empty_paths(int argc, char** argv) {
  static const char* const kPathFlags[] = {"--trace", "--vcd", "--chart", "--checkpoint", "--out", "--output", "-o",
                                           "--report", "--log", "--measure-out", "--write-topology", "--data-dir",
                                           "--config-dir", "--reference", "--calibration", "--model", "--chakra"};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;
    for (const char* f : kPathFlags) {
      const std::string flag = f;
      const bool separate = a == flag && i + 1 < argc && argv[i + 1][0] == '\0';
      const bool joined = a == flag + "=";
      if (separate || joined) throw xpusim::UserError(flag + ": empty path (give a file name, or leave " + flag + " out)");
    }
  }
}

// `--precision fp16` (and `mixed`) are accepted as mixed_fp16: say so once, so a user who
// meant pure fp16 arithmetic knows what was modelled (fp16 compute, fp32 master weights).
void note_precision_aliases(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    std::string v;
    if (a == "--precision" && i + 1 < argc) v = argv[i + 1];
    else if (a.rfind("--precision=", 0) == 0) v = a.substr(12);
    if (v == "fp16" || v == "mixed")
      std::cerr << "xpusim: note: --precision " << v << " means mixed_fp16 (fp16 compute, fp32 master weights)\n";
  }
}

}  // namespace

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
  // Prices from a SkyPilot catalog for every command that prices (compare, sweep, plan): its
  // offers join configs/pricing/ as skypilot/<InstanceType>. $XPUSIM_CATALOG is the default.
  std::string catalog, catalog_region;
  app.add_option("--catalog", catalog, "a SkyPilot vms.csv whose offers join configs/pricing/ (default: $XPUSIM_CATALOG)");
  app.add_option("--catalog-region", catalog_region,
                 "region of --catalog's offers (default: $XPUSIM_CATALOG_REGION, else each instance's cheapest)");
  app.parse_complete_callback([&] {
    if (!catalog.empty() || !catalog_region.empty()) xpusim::cost::set_extra_price_catalog(catalog, catalog_region);
  });
  xpusim::cli::register_all(app);
  if (argc == 1) {
    // A first contact: show what the tool does and its commands rather than an error.
    std::cout << app.help();
    return 0;
  }
  try {
    for (int i = 1; i < argc; ++i) xpusim::require_utf8(argv[i], "argument " + std::to_string(i));
    check_subcommand(app, argc, argv);
    check_empty_paths(argc, argv);
    note_precision_aliases(argc, argv);
    app.parse(argc, argv);
    // A full disk or a closed pipe on stdout is an error, not a silent success.
    xpusim::check_stream(std::cout, "stdout");
    if (std::fflush(stdout) != 0) throw xpusim::UserError("stdout: write failed (disk full or closed pipe?)");
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11's own wording in the project's form: one line, "xpusim: error: ...", exit 2, and a
    // pointer to the help of the command that was being parsed.
    std::string cmd;
    for (int i = 1; i < argc; ++i)
      if (argv[i][0] != '-') {
        cmd = std::string(" ") + argv[i];
        break;
      }
    std::cerr << "xpusim: error: " << e.what() << " (see: xpusim" << cmd << " --help)\n";
    return 2;
  } catch (const xpusim::FieldError& e) {
    std::cerr << "xpusim: error: " << xpusim::cli::flag_for_field(e.field()) << ": " << e.message() << "\n";
    return 2;
  } catch (const xpusim::UserError& e) {
    std::cerr << "xpusim: error: " << e.what() << "\n";
    return 2;
  } catch (const xpusim::UnavailableError& e) {
    std::cerr << "xpusim: unavailable: " << e.what() << "\n";
    return 3;
  } catch (const xpusim::InterruptedError& e) {
    std::cerr << "xpusim: interrupted: " << e.what() << "\n";
    return 130;
  } catch (const YAML::Exception& e) {
    // A YAML value of the wrong type that a loader read without its own check: still the
    // input's fault. Loaders name file:line themselves; this is the net under them.
    std::cerr << "xpusim: error: YAML: " << e.what() << "\n";
    return 2;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the user gave that the file system refuses (name too long, permission denied):
    // bad input, not a bug. Loaders check the common cases with clearer words.
    std::cerr << "xpusim: error: " << e.path1().string() << ": " << e.code().message() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "xpusim: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
