// SpecReader: reads one YAML mapping into a typed, immutable Spec struct exactly once.
// Every field is declared with a unit, a default and a description; unknown keys are
// errors reported as "file:line: key: message". The declared fields are kept (docs()) as the
// schema of each spec.
#pragma once
#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace xpusim {

struct FieldDoc {
  std::string key;
  std::string unit;
  std::string default_value;  // "required" when there is none
  std::string description;
};

// Where a YAML node came from, for error messages.
std::string yaml_location(const std::string& file, const YAML::Node& node);

// Loads a YAML file (uncached; configs go through load_config_yaml in config_paths.hpp);
// syntax errors become UserError with file:line.
YAML::Node load_yaml_file(const std::string& path);
YAML::Node parse_yaml_text(const std::string& text, const std::string& path);
std::string read_text_file(const std::string& path);  // UserError "PATH: cannot open file"

// The range checks most fields share (the `check` argument of SpecReader's scalars), one
// definition for every loader; a check particular to one field stays next to it.
namespace checks {
inline constexpr auto positive = [](auto v) { return v > 0 ? "" : "must be > 0"; };
inline constexpr auto non_negative = [](auto v) { return v >= 0 ? "" : "must be >= 0"; };
inline constexpr auto fraction = [](double v) { return v > 0 && v <= 1 ? "" : "must be in (0, 1]"; };
}  // namespace checks

class SpecReader {
 public:
  SpecReader(YAML::Node node, std::string file, std::string context = "");

  // Scalars. `check` returns an error message (empty when the value is fine).
  double number(const std::string& key, std::optional<double> def, const std::string& unit,
                const std::string& desc, const std::function<std::string(double)>& check = {});
  long long integer(const std::string& key, std::optional<long long> def, const std::string& unit,
                    const std::string& desc, const std::function<std::string(long long)>& check = {});
  std::string text(const std::string& key, std::optional<std::string> def, const std::string& desc,
                   const std::vector<std::string>& allowed = {});
  bool flag(const std::string& key, std::optional<bool> def, const std::string& desc);
  std::vector<double> numbers(const std::string& key, std::optional<std::vector<double>> def,
                              const std::string& unit, const std::string& desc);
  std::vector<long long> integers(const std::string& key, std::optional<std::vector<long long>> def,
                                  const std::string& unit, const std::string& desc);
  std::map<std::string, double> number_map(const std::string& key, const std::string& unit,
                                           const std::string& desc);
  // A nested mapping or sequence, for loaders that recurse (returns a null node when absent).
  YAML::Node child(const std::string& key, const std::string& desc, bool required = false);

  bool has(const std::string& key) const;
  // Call once all fields are read: rejects keys that no field declared.
  void finish();

  const std::vector<FieldDoc>& docs() const { return docs_; }
  const std::string& file() const { return file_; }
  const YAML::Node& node() const { return node_; }
  [[noreturn]] void fail(const std::string& key, const std::string& msg) const;
  // `key`'s value was written in another file (a framework profile's base): an error about it
  // names that file and line, and says whose value it is.
  void taken_from(const std::string& key, const std::string& file) { origins_[key] = file; }

 private:
  YAML::Node get(const std::string& key) const;
  // number() and integer() alike: the default when the key is absent, else the scalar as T.
  template <class T>
  T read_scalar(const std::string& key, const std::optional<T>& def, const std::string& desc, const char* expected);
  // numbers() and integers() alike: EXPECTED names one element ("number"); SCALAR_IS_LIST reads
  // a lone scalar as a list of one.
  template <class T>
  std::vector<T> read_list(const std::string& key, const std::optional<std::vector<T>>& def, const std::string& unit,
                           const std::string& desc, const char* expected, bool scalar_is_list);
  void declare(const std::string& key, const std::string& unit, const std::string& def,
               const std::string& desc);
  YAML::Node node_;
  std::string file_;
  std::string context_;
  std::map<std::string, std::string> origins_;  // key -> the file its value was written in
  std::set<std::string> known_;
  std::vector<FieldDoc> docs_;
};

// Applies `key=value` overrides (the CLI's --set) to a mapping before it is parsed, so overrides are
// validated by the same reader as the file. Nested keys use dots (`host.cores=4`).
// A key the file does not have is still allowed; the reader then rejects it if unknown.
// Errors are FieldError naming `field`.
void apply_overrides(YAML::Node& node, const std::vector<std::string>& overrides,
                     const std::string& field = "set");

}  // namespace xpusim
