#include "common/config_paths.hpp"
#include "common/suggest.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <vector>

#include "common/error.hpp"
#include "common/spec_reader.hpp"

#ifndef XPUSIM_DEFAULT_CONFIG_DIR
#define XPUSIM_DEFAULT_CONFIG_DIR "configs"
#endif

namespace xpusim {

namespace fs = std::filesystem;

namespace {

std::string& config_dir_override() {
  static std::string dir;
  return dir;
}

// The file's text is kept, not its node: YAML::Clone drops the marks that give errors their
// line numbers, and parsing a config's few hundred bytes costs microseconds.
struct CachedFile {
  fs::file_time_type mtime;
  std::uintmax_t size = 0;
  std::string text;
};

struct FileCache {
  std::mutex mu;
  std::map<std::string, CachedFile> files;
  std::map<std::string, int> loads;
};

FileCache& file_cache() {
  static FileCache c;
  return c;
}

}  // namespace

void set_config_dir(const std::string& dir) { config_dir_override() = dir; }

// An installed binary finds the configs installed beside it (PREFIX/bin/xpusim ->
// PREFIX/share/xpusim/configs), so the prefix can move and the checkout can go. Looked up
// once: the executable does not move while it runs.
static const std::string& installed_config_dir() {
  static const std::string dir = [] {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec || exe.empty()) return std::string();
    fs::path d = exe.parent_path().parent_path() / "share" / "xpusim" / "configs";
    return fs::is_directory(d, ec) ? d.string() : std::string();
  }();
  return dir;
}

std::string config_dir() {
  if (!config_dir_override().empty()) return config_dir_override();
  if (const char* env = std::getenv("XPUSIM_CONFIG_DIR"); env && *env) return env;
  if (!installed_config_dir().empty()) return installed_config_dir();
  // The build tree (and programs linked against the libraries) use the source tree's configs/.
  return XPUSIM_DEFAULT_CONFIG_DIR;
}

bool is_config_path(const std::string& name_or_path) {
  return name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".yaml") ||
         name_or_path.ends_with(".yml");
}

std::string resolve_config(const std::string& kind, const std::string& name_or_path) {
  if (is_config_path(name_or_path)) return name_or_path;
  return (fs::path(config_dir()) / kind / (name_or_path + ".yaml")).string();
}

std::string find_config_file(const std::string& kind, const std::string& name_or_path, const std::string& field,
                             const std::string& noun) {
  std::string path = resolve_config(kind, name_or_path);
  std::error_code ec;
  if (fs::exists(path, ec)) return path;
  std::vector<std::string> names;
  fs::path dir = fs::path(config_dir()) / kind;
  // No such folder at all: the configuration directory itself is wrong (say, a relative
  // XPUSIM_CONFIG_DIR read from another working directory), not the name.
  if (!fs::is_directory(dir, ec)) {
    const char* env = std::getenv("XPUSIM_CONFIG_DIR");
    const bool from_env = config_dir_override().empty() && env && *env;
    throw FieldError(field, "unknown " + noun + " '" + name_or_path + "': the configuration directory '" + config_dir() +
                                "'" + (from_env ? " (XPUSIM_CONFIG_DIR)" : "") + " has no " + kind + "/ folder" +
                                (fs::path(config_dir()).is_relative() ? " (a relative path, read from " +
                                                                            fs::current_path(ec).string() + ")"
                                                                      : ""));
  }
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  std::string hint = did_you_mean(name_or_path, names);
  if (!hint.empty()) hint = "; " + hint;
  throw FieldError(field, "unknown " + noun + " '" + name_or_path + "'" + hint + " (known: " + list + ")");
}

YAML::Node load_config_yaml(const std::string& path) {
  FileCache& c = file_cache();
  std::error_code ec;
  const auto mtime = fs::last_write_time(path, ec);
  const auto size = ec ? 0 : fs::file_size(path, ec);
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.files.find(path);
    if (!ec && it != c.files.end() && it->second.mtime == mtime && it->second.size == size)
      return parse_yaml_text(it->second.text, path);
  }
  std::string text = read_text_file(path);  // UserError "PATH: cannot open file"
  {
    std::lock_guard<std::mutex> lock(c.mu);
    ++c.loads[path];
    if (!ec) c.files[path] = CachedFile{mtime, size, text};
  }
  return parse_yaml_text(text, path);
}

int config_file_loads(const std::string& path) {
  FileCache& c = file_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  auto it = c.loads.find(path);
  return it == c.loads.end() ? 0 : it->second;
}

void forget_config_file(const std::string& path) {
  FileCache& c = file_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.files.erase(path);
}

void reset_config_file_loads() {
  FileCache& c = file_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.loads.clear();
  c.files.clear();
}

}  // namespace xpusim
