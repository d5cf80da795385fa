// The name index of the framework profiles (framework_spec.hpp): which profile file a
// framework name (a file stem or a name a reference CSV uses) selects on an engine, built once
// per change of configs/frameworks/.
#include <algorithm>
#include <filesystem>
#include <fnmatch.h>
#include <memory>
#include <mutex>

#include "common/config_paths.hpp"
#include "common/error.hpp"
#include "engine/framework_spec.hpp"

namespace xpusim {

namespace fs = std::filesystem;

namespace {
// The profile files of the config directory, sorted (a stable order for messages).
std::vector<std::string> profile_files() {
  const fs::path dir = fs::path(config_dir()) / "frameworks";
  std::vector<std::string> files;
  std::error_code ec;
  if (fs::is_directory(dir, ec))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".yaml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

// What a name lookup needs of each profile: its file, name, the names it answers to, its
// engines, and the parsed profile itself.
struct ProfileEntry {
  std::string file, name;
  std::vector<std::string> names, engines, versions;
  std::shared_ptr<const FrameworkSpec> spec;  // the parsed profile, reused by find_framework_profile
  bool claims(const std::string& version) const {
    for (const auto& v : versions)
      if (fnmatch(v.c_str(), version.c_str(), 0) == 0) return true;
    return false;
  }
  bool answers_to(const std::string& n) const {
    return name == n || std::find(names.begin(), names.end(), n) != names.end();
  }
  bool on(const std::string& engine) const { return std::find(engines.begin(), engines.end(), engine) != engines.end(); }
};

// The name index of the config directory's profiles, built once: every profile is parsed the
// first time a name is looked up, not at every lookup. Rebuilt when the directory, its file
// list or a file's size or modification time changes (tests write scratch config directories).
std::shared_ptr<const std::vector<ProfileEntry>> profile_index() {
  static std::mutex mu;
  static std::string signature;
  static std::shared_ptr<const std::vector<ProfileEntry>> index;
  const std::vector<std::string> files = profile_files();
  std::string sig = config_dir();
  for (const auto& f : files) {
    std::error_code ec;
    const auto size = fs::file_size(f, ec);
    const auto time = fs::last_write_time(f, ec).time_since_epoch().count();
    sig += "\n" + f + " " + std::to_string(size) + " " + std::to_string(time);
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    if (index && sig == signature) return index;
  }
  auto built = std::make_shared<std::vector<ProfileEntry>>();
  for (const auto& f : files) {
    auto spec = std::make_shared<const FrameworkSpec>(load_framework_spec(f));
    built->push_back({f, spec->name, spec->names, spec->engines, spec->versions, spec});
  }
  std::lock_guard<std::mutex> lock(mu);
  signature = sig;
  index = built;
  return index;
}
// The names a reference CSV's framework column (or an option's framework) may use: each
// profile's `names`, or its file stem when it lists none. Stems also work, but a CSV names the
// stack ("keras-tf1.2-pip"), so the error lists what a CSV would write.
void add_names(const ProfileEntry& p, std::vector<std::string>& out) {
  const std::vector<std::string> own = p.names.empty() ? std::vector<std::string>{p.name} : p.names;
  for (const auto& n : own)
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
}
std::string listed(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + ("'" + n + "'");
  return s.empty() ? "none" : s;
}
}  // namespace

std::string find_framework_file(const std::string& name, const std::string& engine, const std::string& version) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos || name.ends_with(".yaml")) {
    std::error_code ec;
    if (!fs::exists(name, ec)) throw FieldError("framework", "no such profile file '" + name + "'");
    return name;
  }
  std::vector<std::string> known;
  const ProfileEntry *versioned = nullptr, *unversioned = nullptr, *first = nullptr;
  for (const auto& p : *profile_index()) {
    if (p.on(engine) && p.name == name) return p.file;  // the stem names one profile
    if (p.answers_to(name) && p.on(engine)) {
      if (!first) first = &p;
      if (!versioned && !version.empty() && p.claims(version)) versioned = &p;
      if (!unversioned && p.versions.empty()) unversioned = &p;
    }
    if (p.on(engine)) add_names(p, known);
  }
  if (const ProfileEntry* p = versioned ? versioned : unversioned ? unversioned : first) return p->file;
  throw FieldError("framework", "no profile for '" + name + "' on the " + engine + " engine (names a CSV or option may use: " +
                                    listed(known) + "; configs/frameworks/)");
}

std::vector<FrameworkProfileInfo> framework_profiles() {
  std::vector<FrameworkProfileInfo> out;
  for (const auto& p : *profile_index())
    out.push_back({p.name, p.spec->description, p.spec->base, p.names, p.engines, p.versions, p.spec->constants_neutral()});
  return out;
}

std::shared_ptr<const FrameworkSpec> find_framework_profile(const std::string& name, const std::string& engine) {
  const std::string file = find_framework_file(name, engine);
  if (file.empty()) return nullptr;
  for (const auto& p : *profile_index())
    if (p.file == file) return p.spec;
  return std::make_shared<const FrameworkSpec>(load_framework_spec(file));  // a path outside the index
}

void check_framework_name(const std::string& name) {
  if (name.find('/') != std::string::npos || name.ends_with(".yaml")) {
    load_framework_spec(find_framework_file(name, ""));  // a path: must exist and be a profile
    return;
  }
  std::vector<std::string> known;
  for (const auto& p : *profile_index()) {
    if (p.answers_to(name)) return;
    add_names(p, known);
  }
  throw FieldError("framework", "no profile named '" + name + "' (names a CSV or option may use: " + listed(known) +
                                    "; configs/frameworks/)");
}

}  // namespace xpusim
