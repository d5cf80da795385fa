#include "common/spec_reader.hpp"

#include <cerrno>
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "common/checked_io.hpp"
#include "common/file_guard.hpp"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/parser.h"

namespace xpusim {

std::string yaml_location(const std::string& file, const YAML::Node& node) {
  std::ostringstream os;
  os << file;
  if (node && node.Mark().line >= 0) os << ":" << node.Mark().line + 1;
  return os.str();
}

std::string read_text_file(const std::string& path) {
  // Regular files only, within a size cap: a directory read as empty, a FIFO blocked for
  // ever and a link to /dev/zero filled memory (file_guard.hpp).
  return read_input_file(path, kMaxTextInputBytes);
}

YAML::Node load_yaml_file(const std::string& path) { return parse_yaml_text(read_text_file(path), path); }

namespace {

// yaml-cpp keeps every pair of a mapping and lookups return the first, so a repeated key
// would silently lose its second value: reject it, naming both lines. Keys must be plain
// scalars (a loader reads them as strings).
void check_mapping_keys(const YAML::Node& n, const std::string& path, int depth) {
  if (depth > 64) throw UserError(yaml_location(path, n) + ": YAML nested more than 64 levels deep");
  if (n.IsMap()) {
    std::map<std::string, YAML::Node> seen;
    for (const auto& kv : n) {
      if (!kv.first.IsScalar())
        throw UserError(yaml_location(path, kv.first) + ": a mapping key must be a plain name, not a list or mapping");
      const std::string& k = kv.first.Scalar();
      auto [it, fresh] = seen.emplace(k, kv.first);
      if (!fresh) {
        throw UserError(yaml_location(path, kv.first) + ": " + k + ": duplicate key (first given at line " +
                        std::to_string(it->second.Mark().line + 1) + ")");
      }
      check_mapping_keys(kv.second, path, depth + 1);
    }
  } else if (n.IsSequence()) {
    for (const auto& e : n) check_mapping_keys(e, path, depth + 1);
  }
}

// Records the first content (anything but an empty document) of the documents after the first.
class SecondDocumentFinder : public YAML::EventHandler {
 public:
  int documents = 0;
  int content_line = 0;  // 1-based line of the first content in a later document; 0: none
  void OnDocumentStart(const YAML::Mark&) override { ++documents; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { note(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override { note(m); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    note(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    note(m);
  }
  void OnMapEnd() override {}

 private:
  void note(const YAML::Mark& m) {
    if (documents > 1 && content_line == 0) content_line = m.line + 1;
  }
};

// Bounds on what a YAML text may expand to, checked on the parser's events before any tree
// is built or walked: nesting deeper than kMaxYamlDepth (20,000 '[' reached yaml-cpp's own
// recursion guard, "bad file"), and more than kMaxYamlNodes nodes once every alias is
// expanded (a 400-byte "billion laughs" file took a minute to walk under an unknown key; a
// 10 MB list 14 s: each extra node costs three parses and a walk).
constexpr int kMaxYamlDepth = 64;
constexpr uint64_t kMaxYamlNodes = 100'000;  // the largest shipped spec has 631 (tpu_analytical_10k)

struct YamlBoundError {
  int line;
  std::string what;
};

class YamlBounds : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t a) override { leaf(m, a, 1); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t a) override {
    auto it = sizes_.find(a);
    leaf(m, 0, it == sizes_.end() ? 1 : it->second);
  }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t a, const std::string&) override { leaf(m, a, 1); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t a, YAML::EmitterStyle::value) override {
    open(m, a);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t a, YAML::EmitterStyle::value) override {
    open(m, a);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Frame {
    YAML::anchor_t anchor;
    uint64_t size;
  };
  void add(const YAML::Mark& m, uint64_t n) {
    total_ += n;
    if (total_ > kMaxYamlNodes)
      throw YamlBoundError{m.line + 1, "more than " + std::to_string(kMaxYamlNodes) +
                                           " values (an alias *name counting as the values it stands for); a spec file is far smaller"};
  }
  void leaf(const YAML::Mark& m, YAML::anchor_t a, uint64_t n) {
    add(m, n);
    if (a) sizes_[a] = n;
    if (!stack_.empty()) stack_.back().size += n;
  }
  void open(const YAML::Mark& m, YAML::anchor_t a) {
    if (static_cast<int>(stack_.size()) >= kMaxYamlDepth)
      throw YamlBoundError{m.line + 1, "YAML nested more than " + std::to_string(kMaxYamlDepth) + " levels deep"};
    add(m, 1);
    stack_.push_back({a, 1});
  }
  void close() {
    if (stack_.empty()) return;
    const Frame f = stack_.back();
    stack_.pop_back();
    if (f.anchor) sizes_[f.anchor] = f.size;
    if (!stack_.empty()) stack_.back().size = std::min<uint64_t>(stack_.back().size + f.size, kMaxYamlNodes + 1);
  }
  std::vector<Frame> stack_;
  std::map<YAML::anchor_t, uint64_t> sizes_;
  uint64_t total_ = 0;
};

// Runs YamlBounds over the first document: UserError "PATH:LINE: ..." past a bound.
void check_yaml_bounds(const std::string& text, const std::string& path) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  YamlBounds bounds;
  try {
    parser.HandleNextDocument(bounds);
  } catch (const YamlBoundError& e) {
    throw UserError(path + ":" + std::to_string(e.line) + ": " + e.what);
  }
}

// The line of a second document with content, or 0. yaml-cpp's LoadAll loops for ever (and
// grows without bound) on a stray flow token such as a lone ',' (found by the YAML fuzzers):
// its parser reports one more empty document per call without consuming the token. Every
// document after the first begins with a '---' or follows a '...' marker at a line start, so
// the documents are read at most (markers + 1) times.
int line_of_second_document(const std::string& text) {
  size_t markers = 0;
  size_t at = 0;
  while (at < text.size()) {
    const auto three = [&](char c) { return at + 3 <= text.size() && text[at] == c && text[at + 1] == c && text[at + 2] == c; };
    if (three('-') || three('.')) ++markers;
    const size_t eol = text.find('\n', at);
    if (eol == std::string::npos) break;
    at = eol + 1;
  }
  std::istringstream in(text);
  YAML::Parser parser(in);
  SecondDocumentFinder finder;
  for (size_t calls = 0; calls <= markers; ++calls) {
    if (!parser.HandleNextDocument(finder)) return 0;
    if (finder.content_line > 0) return finder.content_line;
  }
  // More documents than markers allow: the parser is stuck on a token it does not consume.
  if (parser.HandleNextDocument(finder)) {
    // yaml-cpp gives no position here: name the first line that starts with a ',' if any.
    YAML::Mark at = YAML::Mark::null_mark();
    std::istringstream lines(text);
    std::string l;
    for (int n = 0; std::getline(lines, l); ++n)
      if (size_t c = l.find_first_not_of(" \t"); c != std::string::npos && l[c] == ',') {
        at.line = n;
        break;
      }
    throw YAML::ParserException(at, "a token outside any [list] or {mapping} (a stray ',')");
  }
  return 0;
}

}  // namespace

YAML::Node parse_yaml_text(const std::string& text, const std::string& path) {
  // YAML is UTF-8 and every string read here can reach JSON output, which must be UTF-8.
  if (size_t bad = first_invalid_utf8(text); bad != std::string::npos) {
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(text[bad]));
    throw UserError(path + ":" + std::to_string(line_of_offset(text, bad)) + ": not valid UTF-8 (byte " + byte + ")");
  }
  const int64_t cap = input_size_cap(kMaxYamlInputBytes);
  if (static_cast<int64_t>(text.size()) > cap)
    throw UserError(path + ": " + std::to_string(text.size()) + " bytes, more than the " + std::to_string(cap >> 20) +
                    " MiB limit for a YAML spec (set XPUSIM_MAX_INPUT_MB to raise it)");
  YAML::Node root;
  try {
    check_yaml_bounds(text, path);
    // YAML::Load reads the first document only: a file with a second one ('---' then more
    // keys) silently lost it, like a duplicate key would. An empty trailing document is fine.
    root = YAML::Load(text);
    if (int line = line_of_second_document(text); line > 0)
      throw UserError(path + ":" + std::to_string(line) + ": a second YAML document (after '---'): a spec file holds one");
  } catch (const YAML::Exception& e) {
    std::ostringstream os;
    os << path;
    if (e.mark.line >= 0) os << ":" << e.mark.line + 1;
    os << ": YAML syntax error: " << e.msg;
    throw UserError(os.str());
  }
  check_mapping_keys(root, path, 0);
  return root;
}

SpecReader::SpecReader(YAML::Node node, std::string file, std::string context)
    : node_(std::move(node)), file_(std::move(file)), context_(std::move(context)) {
  if (node_ && !node_.IsMap() && !node_.IsNull()) {
    throw UserError(yaml_location(file_, node_) + ": " + (context_.empty() ? "" : context_ + ": ") +
                    "expected a mapping of key: value");
  }
}

void SpecReader::fail(const std::string& key, const std::string& msg) const {
  YAML::Node at = node_ ? node_[key] : YAML::Node();
  const bool here = at && at.IsDefined();
  const std::string full_key = context_.empty() ? key : context_ + "." + key;
  auto origin = origins_.find(key);
  if (here && origin != origins_.end())
    throw UserError(yaml_location(origin->second, at) + ": " + full_key + ": " + msg + " (the value " + file_ +
                    " takes from its base)");
  throw UserError(yaml_location(file_, here ? at : node_) + ": " + full_key + ": " + msg);
}

YAML::Node SpecReader::get(const std::string& key) const {
  if (!node_ || !node_.IsMap()) return YAML::Node();
  return node_[key];
}

bool SpecReader::has(const std::string& key) const {
  YAML::Node n = get(key);
  return n && n.IsDefined() && !n.IsNull();
}

void SpecReader::declare(const std::string& key, const std::string& unit, const std::string& def,
                         const std::string& desc) {
  known_.insert(key);
  docs_.push_back({context_.empty() ? key : context_ + "." + key, unit, def, desc});
}

static std::string fmt_num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

template <class T>
T SpecReader::read_scalar(const std::string& key, const std::optional<T>& def, const std::string& desc,
                         const char* expected) {
  if (!has(key)) {
    if (!def) fail(key, "required field is missing (" + desc + ")");
    return *def;
  }
  YAML::Node n = get(key);
  if (!n.IsScalar()) fail(key, std::string("expected ") + expected);
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    fail(key, std::string("expected ") + expected + ", got '" + n.Scalar() + "'");
  }
}

double SpecReader::number(const std::string& key, std::optional<double> def, const std::string& unit,
                          const std::string& desc, const std::function<std::string(double)>& check) {
  declare(key, unit, def ? fmt_num(*def) : "required", desc);
  const double v = read_scalar<double>(key, def, desc, "a number");
  if (has(key) && !std::isfinite(v)) fail(key, "must be a finite number, got '" + get(key).Scalar() + "'");
  if (check) {
    std::string err = check(v);
    if (!err.empty()) fail(key, err);
  }
  return v;
}

long long SpecReader::integer(const std::string& key, std::optional<long long> def, const std::string& unit,
                              const std::string& desc, const std::function<std::string(long long)>& check) {
  declare(key, unit, def ? std::to_string(*def) : "required", desc);
  const long long v = read_scalar<long long>(key, def, desc, "an integer");
  if (check) {
    std::string err = check(v);
    if (!err.empty()) fail(key, err);
  }
  return v;
}

std::string SpecReader::text(const std::string& key, std::optional<std::string> def, const std::string& desc,
                             const std::vector<std::string>& allowed) {
  std::string d = desc;
  if (!allowed.empty()) {
    d += " (one of:";
    for (const auto& a : allowed) d += " " + a;
    d += ")";
  }
  declare(key, "", def ? *def : "required", d);
  std::string v;
  if (!has(key)) {
    if (!def) fail(key, "required field is missing (" + desc + ")");
    v = *def;
  } else {
    YAML::Node n = get(key);
    if (!n.IsScalar()) fail(key, "expected a string");
    v = n.Scalar();
  }
  if (!allowed.empty()) {
    bool ok = false;
    for (const auto& a : allowed) ok = ok || a == v;
    if (!ok) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      fail(key, "'" + v + "' is not one of: " + list);
    }
  }
  return v;
}

bool SpecReader::flag(const std::string& key, std::optional<bool> def, const std::string& desc) {
  declare(key, "bool", def ? (*def ? "true" : "false") : "required", desc);
  if (!has(key)) {
    if (!def) fail(key, "required field is missing (" + desc + ")");
    return *def;
  }
  try {
    return get(key).as<bool>();
  } catch (const YAML::Exception&) {
    fail(key, "expected true or false");
  }
}

template <class T>
std::vector<T> SpecReader::read_list(const std::string& key, const std::optional<std::vector<T>>& def,
                                     const std::string& unit, const std::string& desc, const char* expected,
                                     bool scalar_is_list) {
  declare(key, unit, def ? "[...]" : "required", desc);
  if (!has(key)) {
    if (!def) fail(key, "required field is missing (" + desc + ")");
    return *def;
  }
  YAML::Node n = get(key);
  const std::string list_of = std::string("expected a list of ") + expected + "s";
  if (scalar_is_list && n.IsScalar()) {
    try {
      return {n.as<T>()};
    } catch (const YAML::Exception&) {
      fail(key, std::string("expected an ") + expected + " or a list of " + expected + "s");
    }
  }
  if (!n.IsSequence()) fail(key, list_of);
  std::vector<T> out;
  for (const auto& e : n) {
    try {
      out.push_back(e.as<T>());
    } catch (const YAML::Exception&) {
      fail(key, list_of);
    }
    if constexpr (std::is_floating_point_v<T>)
      if (!std::isfinite(out.back())) fail(key, "must be finite numbers, got '" + e.Scalar() + "'");
  }
  return out;
}

std::vector<double> SpecReader::numbers(const std::string& key, std::optional<std::vector<double>> def,
                                        const std::string& unit, const std::string& desc) {
  return read_list<double>(key, def, unit, desc, "number", false);
}

std::vector<long long> SpecReader::integers(const std::string& key, std::optional<std::vector<long long>> def,
                                            const std::string& unit, const std::string& desc) {
  return read_list<long long>(key, def, unit, desc, "integer", true);
}

std::map<std::string, double> SpecReader::number_map(const std::string& key, const std::string& unit,
                                                     const std::string& desc) {
  declare(key, unit, "{}", desc);
  std::map<std::string, double> out;
  if (!has(key)) return out;
  YAML::Node n = get(key);
  if (!n.IsMap()) fail(key, "expected a mapping of name: number");
  for (const auto& kv : n) {
    try {
      double v = kv.second.as<double>();
      if (!std::isfinite(v)) fail(key, kv.first.as<std::string>() + ": must be a finite number");
      out[kv.first.as<std::string>()] = v;
    } catch (const YAML::Exception&) {
      fail(key, "expected a mapping of name: number");
    }
  }
  return out;
}

YAML::Node SpecReader::child(const std::string& key, const std::string& desc, bool required) {
  declare(key, "", required ? "required" : "(none)", desc);
  if (!has(key)) {
    if (required) fail(key, "required field is missing (" + desc + ")");
    return YAML::Node();
  }
  return get(key);
}

void SpecReader::finish() {
  if (!node_ || !node_.IsMap()) return;
  for (const auto& kv : node_) {
    if (!kv.first.IsScalar()) throw UserError(yaml_location(file_, kv.first) + ": a key must be a plain name");
    std::string k = kv.first.Scalar();
    if (!known_.count(k)) {
      std::string list;
      for (const auto& a : known_) list += (list.empty() ? "" : ", ") + a;
      std::string full_key = context_.empty() ? k : context_ + "." + k;
      throw UserError(yaml_location(file_, kv.first) + ": " + full_key + ": unknown key (known keys: " + list + ")");
    }
  }
}

void apply_overrides(YAML::Node& node, const std::vector<std::string>& overrides, const std::string& field) {
  for (const auto& o : overrides) {
    auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw FieldError(field, o + ": expected KEY=VALUE");
    }
    std::string key = o.substr(0, eq);
    std::string value = o.substr(eq + 1);
    // Walk dotted keys; yaml-cpp nodes are handles, so assign through a chain of copies.
    std::vector<std::string> parts;
    std::stringstream ss(key);
    for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
    std::vector<YAML::Node> chain{node};
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      YAML::Node next = chain.back()[parts[i]];
      if (!next.IsDefined() || !next.IsMap()) {
        throw FieldError(field, o + ": '" + parts[i] + "' is not a mapping in this file");
      }
      chain.push_back(next);
    }
    YAML::Node parsed;
    try {
      parsed = YAML::Load(value);
    } catch (const YAML::Exception& e) {
      throw FieldError(field, o + ": value is not valid YAML: " + e.msg);
    }
    chain.back()[parts.back()] = parsed;
  }
}

}  // namespace xpusim
