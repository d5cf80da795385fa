// Where configuration files live and how they are read: the config root (--config-dir,
// $XPUSIM_CONFIG_DIR, the installed share/xpusim/configs beside the binary, or the source
// tree's configs/), name -> path resolution per kind
// (devices, systems, models, ...), and a process-wide cache so each YAML file is opened and
// parsed at most once per process (a change on disk, seen by its mtime and size, reloads it).
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>

namespace xpusim {

// Config directory: set_config_dir(), else $XPUSIM_CONFIG_DIR, else <exe dir>/../share/xpusim/configs
// when that exists (an installed binary), else the source tree's configs/ (compiled in).
std::string config_dir();
void set_config_dir(const std::string& dir);

// A name (configs/KIND/NAME.yaml) or a path (anything with a '/' or a .yaml/.yml suffix).
// Whether a config argument is a path (has a '/' or ends in .yaml/.yml) rather than a name
// under configs/KIND/: the one rule resolve_config and the CLI's arguments share.
bool is_config_path(const std::string& name_or_path);
std::string resolve_config(const std::string& kind, const std::string& name_or_path);
// resolve_config + existence check; otherwise FieldError(field, "unknown NOUN 'x' (known: a, b, ...)")
// listing configs/KIND/.
std::string find_config_file(const std::string& kind, const std::string& name_or_path, const std::string& field,
                             const std::string& noun);

// The parsed YAML of a file, from the cache when the file is unchanged. The node returned is a
// deep copy: callers may modify it (overrides) without touching the cache. Syntax errors are
// UserError with file:line.
YAML::Node load_config_yaml(const std::string& path);
// How many times `path` was actually opened and parsed by load_config_yaml (tests count loads).
int config_file_loads(const std::string& path);
void reset_config_file_loads();
// Drops one file from the cache, so that its next load reads it again even when its size and
// modification time look unchanged (a file rewritten within the clock's resolution: the fuzzers'
// scratch input). The other files stay cached.
void forget_config_file(const std::string& path);

}  // namespace xpusim
