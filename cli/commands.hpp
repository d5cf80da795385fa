// Each subcommand lives in its own cli/cmd_*.cpp and registers itself here.
#pragma once
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace xpusim::cli {

void register_all(CLI::App& app);

// One line per command (commands.cpp calls them in this order).
void register_models(CLI::App& app);
void register_graph(CLI::App& app);
void register_backends(CLI::App& app);
void register_predict(CLI::App& app);
void register_run(CLI::App& app);
void register_validate(CLI::App& app);
void register_calibrate(CLI::App& app);
void register_systolic(CLI::App& app);
void register_compare(CLI::App& app);
void register_train(CLI::App& app);
void register_sweep(CLI::App& app);

// Shared flag helpers so every command spells and validates them the same way.
void add_format_option(CLI::App& cmd, std::string& target, const std::string& choices, const std::string& def);

// Library errors name request fields (FieldError: "batch", "target_accuracy"); the CLI shows
// the flag: "--" + field with '_' -> '-', unless the running command aliased the field to a
// flag of its own (`run` takes the replica count as --gpus).
std::string flag_for_field(const std::string& field);
void alias_field_flag(const std::string& field, const std::string& flag);

}  // namespace xpusim::cli
