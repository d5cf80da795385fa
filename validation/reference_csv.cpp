#include "validation/reference_csv.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>

#include "common/checked_io.hpp"
#include "common/error.hpp"
#include "common/output.hpp"
#include "common/spec_reader.hpp"

namespace xpusim::validation {

const std::vector<std::string>& reference_columns() {
  static const std::vector<std::string> cols = {
      "source", "device", "num_devices", "setup", "framework", "model", "dataset",
      "batch_per_device", "precision", "data", "metric", "value", "unit", "note"};
  return cols;
}

const std::vector<std::string>& optional_reference_columns() {
  static const std::vector<std::string> cols = {"seq_len", "global_batch", "tp", "pp", "pp_virtual_stages",
                                                "cp", "sharding", "recompute", "sequence_parallel",
                                                "offer", "framework_version"};
  return cols;
}

namespace {

// "requires PyTorch 19.05-py3 NGC container" -> "pytorch-ngc19.05" (a TensorFlow tag keeps its
// "-tf1"/"-tf2": "tensorflow-ngc20.06-tf1", as the shared notes spell versions); empty when the
// note has no such phrase. The NGC tag is YY.MM, optionally -tfN, then -py2/-py3.
std::string required_ngc_container(const std::string& note) {
  static const std::string phrase = "requires ";
  static const std::string container = " NGC container";
  for (size_t at = note.find(phrase); at != std::string::npos; at = note.find(phrase, at + 1)) {
    const size_t name_b = at + phrase.size();
    const size_t name_e = note.find(' ', name_b);
    if (name_e == std::string::npos) return "";
    const size_t tag_e = note.find(' ', name_e + 1);
    if (tag_e == std::string::npos || note.compare(tag_e, container.size(), container) != 0) continue;
    std::string tag = note.substr(name_e + 1, tag_e - name_e - 1);
    const bool yy_mm = tag.size() >= 5 && std::isdigit(static_cast<unsigned char>(tag[0])) &&
                       std::isdigit(static_cast<unsigned char>(tag[1])) && tag[2] == '.' &&
                       std::isdigit(static_cast<unsigned char>(tag[3])) &&
                       std::isdigit(static_cast<unsigned char>(tag[4]));
    if (!yy_mm) continue;
    for (const char* py : {"-py3", "-py2"}) {
      const std::string suffix(py);
      if (tag.size() > suffix.size() && tag.compare(tag.size() - suffix.size(), suffix.size(), suffix) == 0)
        tag.erase(tag.size() - suffix.size());
    }
    std::string name = note.substr(name_b, name_e - name_b);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return name + "-ngc" + tag;
  }
  return "";
}

}  // namespace

std::string ReferenceRow::stack_version() const {
  if (!framework_version.empty()) return framework_version;
  static const std::string phrase = "framework version ";
  const size_t at = note.rfind(phrase);
  if (at == std::string::npos) return required_ngc_container(note);
  const size_t b = at + phrase.size();
  const size_t e = note.find_first_of(" ;,\t\"", b);
  return note.substr(b, e == std::string::npos ? std::string::npos : e - b);
}

std::optional<long long> ReferenceRow::step_global_batch() const {
  if (global_batch) return global_batch;
  if (!batch_per_device || !num_devices || *batch_per_device <= 0 || *num_devices <= 0) return std::nullopt;
  static const std::string phrase = "micro-batch derived = ";
  const size_t at = note.find(phrase);
  if (at == std::string::npos) return std::nullopt;
  // "A/B": two unsigned integers joined by a slash; anything else states no accumulation.
  const char* p = note.c_str() + at + phrase.size();
  auto digits = [&p](long long& out) {
    if (*p < '0' || *p > '9') return false;
    out = 0;
    for (; *p >= '0' && *p <= '9'; ++p) {
      if (out > 1000000000LL) return false;
      out = out * 10 + (*p - '0');
    }
    return true;
  };
  long long per_device = 0, steps = 0;
  if (!digits(per_device) || *p++ != '/' || !digits(steps) || steps <= 0) return std::nullopt;
  if (per_device % steps != 0 || per_device / steps != *batch_per_device) return std::nullopt;
  return per_device * *num_devices;
}

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

[[noreturn]] void fail(const std::string& file, int line, const std::string& col, const std::string& msg) {
  throw UserError(file + ":" + std::to_string(line) + ": " + col + ": " + msg);
}

std::optional<double> parse_number(const std::string& raw, const std::string& file, int line, const std::string& col) {
  std::string s = trim(raw);
  if (s.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
    fail(file, line, col, "expected a number, got '" + s + "'");
  return v;
}

std::optional<long long> parse_integer(const std::string& raw, const std::string& file, int line,
                                       const std::string& col) {
  std::string s = trim(raw);
  if (s.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (end == s.c_str() || *end != '\0' || errno == ERANGE) fail(file, line, col, "expected an integer, got '" + s + "'");
  if (v <= 0) fail(file, line, col, "must be > 0, got " + s);
  return v;
}

}  // namespace

std::vector<ReferenceRow> parse_reference_csv(const std::string& text, const std::string& file) {
  // Every text field can reach JSON output, which must be UTF-8.
  if (size_t bad = first_invalid_utf8(text); bad != std::string::npos)
    throw UserError(file + ":" + std::to_string(line_of_offset(text, bad)) + ": not valid UTF-8");
  std::vector<CsvRecord> recs = parse_csv(text, file);
  if (recs.empty()) throw UserError(file + ":1: header: the file is empty (expected " +
                                    std::to_string(reference_columns().size()) + " columns: source,device,...)");
  const CsvRecord& head = recs.front();
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < head.fields.size(); ++i) {
    std::string name = trim(head.fields[i]);
    bool known = false;
    for (const auto& c : reference_columns()) known = known || c == name;
    for (const auto& c : optional_reference_columns()) known = known || c == name;
    if (!known) fail(file, head.line, name.empty() ? "column " + std::to_string(i + 1) : name, "unknown column");
    if (index.count(name)) fail(file, head.line, name, "duplicate column");
    index[name] = i;
  }
  for (const auto& c : reference_columns())
    if (!index.count(c)) fail(file, head.line, c, "missing column in the header");

  std::vector<ReferenceRow> rows;
  for (size_t r = 1; r < recs.size(); ++r) {
    const CsvRecord& rec = recs[r];
    if (rec.fields.size() != head.fields.size())
      fail(file, rec.line, "row", "has " + std::to_string(rec.fields.size()) + " fields, the header has " +
                                      std::to_string(head.fields.size()));
    auto get = [&](const std::string& c) { return rec.fields[index.at(c)]; };
    auto opt = [&](const std::string& c) { return index.count(c) ? rec.fields[index.at(c)] : std::string(); };
    auto choice = [&](const std::string& c, const std::vector<std::string>& allowed) {
      std::string v = trim(opt(c));
      if (v.empty()) return v;
      std::string list;
      for (const auto& a : allowed) {
        if (v == a) return v;
        list += (list.empty() ? "" : ", ") + a;
      }
      fail(file, rec.line, c, "unknown value '" + v + "' (one of " + list + ")");
      return v;
    };
    ReferenceRow row;
    row.line = rec.line;
    row.source = trim(get("source"));
    row.device = trim(get("device"));
    if (auto n = parse_integer(get("num_devices"), file, rec.line, "num_devices")) {
      if (*n > 1000000) fail(file, rec.line, "num_devices", "implausibly large: " + std::to_string(*n));
      row.num_devices = static_cast<int>(*n);
    }
    row.setup = trim(get("setup"));
    row.framework = trim(get("framework"));
    row.model = trim(get("model"));
    row.dataset = trim(get("dataset"));
    row.batch_per_device = parse_integer(get("batch_per_device"), file, rec.line, "batch_per_device");
    row.precision = trim(get("precision"));
    row.data = trim(get("data"));
    row.metric = trim(get("metric"));
    row.value = parse_number(get("value"), file, rec.line, "value");
    row.unit = trim(get("unit"));
    row.note = get("note");
    row.seq_len = parse_integer(opt("seq_len"), file, rec.line, "seq_len");
    row.global_batch = parse_integer(opt("global_batch"), file, rec.line, "global_batch");
    row.tp = parse_integer(opt("tp"), file, rec.line, "tp");
    row.pp = parse_integer(opt("pp"), file, rec.line, "pp");
    row.pp_virtual_stages = parse_integer(opt("pp_virtual_stages"), file, rec.line, "pp_virtual_stages");
    row.cp = parse_integer(opt("cp"), file, rec.line, "cp");
    row.sharding = choice("sharding", {"none", "zero1", "zero2", "zero3"});
    row.recompute = choice("recompute", {"none", "selective", "selective_offloaded", "full"});
    std::string sp = choice("sequence_parallel", {"true", "false"});
    if (!sp.empty()) row.sequence_parallel = sp == "true";
    row.offer = trim(opt("offer"));
    row.framework_version = trim(opt("framework_version"));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<ReferenceRow> read_reference_csv(const std::string& path) {
  std::string text;
  try {
    text = read_text_file(path);
  } catch (const UserError& e) {
    throw FieldError("reference", e.what());
  }
  return parse_reference_csv(text, path);
}

void write_reference_csv(std::ostream& os, const std::vector<ReferenceRow>& rows) {
  const auto& cols = reference_columns();
  const bool optional = std::any_of(rows.begin(), rows.end(), [](const ReferenceRow& r) { return r.has_optional(); });
  for (size_t i = 0; i < cols.size(); ++i) os << (i ? "," : "") << cols[i];
  if (optional)
    for (const auto& c : optional_reference_columns()) os << "," << c;
  os << "\n";
  auto num = [](const std::optional<double>& v) {
    if (!v) return std::string();
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", *v);
    return std::string(buf);
  };
  for (const auto& r : rows) {
    std::vector<std::string> f = {r.source, r.device, r.num_devices ? std::to_string(*r.num_devices) : "",
                                  r.setup, r.framework, r.model, r.dataset,
                                  r.batch_per_device ? std::to_string(*r.batch_per_device) : "",
                                  r.precision, r.data, r.metric, num(r.value), r.unit, r.note};
    auto integer = [](const std::optional<long long>& v) { return v ? std::to_string(*v) : std::string(); };
    if (optional) {
      for (const auto& v : {integer(r.seq_len), integer(r.global_batch), integer(r.tp), integer(r.pp),
                            integer(r.pp_virtual_stages), integer(r.cp), r.sharding, r.recompute,
                            r.sequence_parallel ? std::string(*r.sequence_parallel ? "true" : "false") : std::string(),
                            r.offer, r.framework_version})
        f.push_back(v);
    }
    write_csv_record(os, f);
  }
}

}  // namespace xpusim::validation
