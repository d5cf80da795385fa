// SCALE-Sim v2 operand mapping, per its compute modules (systolic_compute_{ws,os,is}.py):
// with ofmap pixels Np = H' x W', window size Kw = Fh x Fw x C and M filters,
//   ws: Sr = Kw, Sc = M,  T = Np      os: Sr = Np, Sc = M, T = Kw      is: Sr = Kw, Sc = Np, T = M
// folds = ceil(Sr / R) x ceil(Sc / C); H' = ceil((H - Fh + S) / S) as in its topology reader.
#include "sim/tpu/scalesim.hpp"

#include <fstream>
#include <sstream>

#include "common/checked_io.hpp"
#include "common/error.hpp"
#include "common/spec_reader.hpp"

namespace xpusim::tpu {

bool parse_dataflow(const std::string& s, Dataflow& out) {
  if (s == "ws") out = Dataflow::ws;
  else if (s == "os") out = Dataflow::os;
  else if (s == "is") out = Dataflow::is;
  else return false;
  return true;
}

namespace {

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

}  // namespace

std::vector<TopologyLayer> read_topology_csv(const std::string& path) {
  std::string text;
  try {
    text = read_text_file(path);
  } catch (const UserError& e) {
    throw FieldError("topology", e.what());
  }
  // Spreadsheets save CSV with a byte-order mark; layer names reach JSON, so UTF-8 only.
  strip_utf8_bom(text);
  if (size_t bad = first_invalid_utf8(text); bad != std::string::npos)
    throw UserError(path + ":" + std::to_string(line_of_offset(text, bad)) + ": not valid UTF-8");
  std::istringstream in(text);
  std::vector<TopologyLayer> layers;
  std::string line;
  int lineno = 0;
  bool header = true;
  while (std::getline(in, line)) {
    ++lineno;
    if (trim(line).empty() || trim(line)[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) f.push_back(trim(cell));
    while (!f.empty() && f.back().empty()) f.pop_back();  // SCALE-Sim rows end with a comma
    if (header) {
      header = false;
      if (!f.empty() && f[0].rfind("Layer", 0) == 0) continue;
    }
    auto where = path + ":" + std::to_string(lineno) + ": ";
    if (f.size() != 8) throw UserError(where + "expected 8 fields (Layer name, IFMAP Height, IFMAP Width, Filter Height, "
                                               "Filter Width, Channels, Num Filter, Strides), got " + std::to_string(f.size()));
    static const char* names[] = {"Layer name", "IFMAP Height", "IFMAP Width", "Filter Height",
                                  "Filter Width", "Channels", "Num Filter", "Strides"};
    int64_t v[8] = {};
    for (int i = 1; i < 8; ++i) {
      size_t used = 0;
      long long x = 0;
      try {
        x = std::stoll(f[static_cast<size_t>(i)], &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != f[static_cast<size_t>(i)].size() || used == 0 || x <= 0)
        throw UserError(where + names[i] + ": expected a positive integer, got '" + f[static_cast<size_t>(i)] + "'");
      if (x > kMaxTopologyValue)
        throw UserError(where + names[i] + ": " + f[static_cast<size_t>(i)] + " is larger than " +
                        std::to_string(kMaxTopologyValue));
      v[i] = x;
    }
    TopologyLayer l{f[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
    if (l.filter_h > l.ifmap_h || l.filter_w > l.ifmap_w)
      throw UserError(where + "Filter Height/Width: larger than the IFMAP (no padding in this convention)");
    layers.push_back(l);
  }
  if (layers.empty()) throw UserError(path + ": no layers");
  return layers;
}

LayerCycles scalesim_layer(const TopologyLayer& l, int64_t rows, int64_t cols, Dataflow df) {
  if (rows <= 0 || cols <= 0 || rows > kMaxArrayDim || cols > kMaxArrayDim)
    throw FieldError("array", "rows and columns must be in [1, " + std::to_string(kMaxArrayDim) + "]");
  // Every product below is checked: a huge layer or array is an error, never wrapped cycles.
  const std::string what = "layer '" + l.name + "'";
  auto mul = [&](int64_t a, int64_t b) { return checked_mul(a, b, what); };
  auto add = [&](int64_t a, int64_t b) { return checked_add(a, b, what); };
  auto cdiv = [&](int64_t a, int64_t b) { return add(a, b - 1) / b; };
  int64_t oh = cdiv(add(l.ifmap_h - l.filter_h, l.stride), l.stride);
  int64_t ow = cdiv(add(l.ifmap_w - l.filter_w, l.stride), l.stride);
  int64_t np = mul(oh, ow), kw = mul(mul(l.filter_h, l.filter_w), l.channels), m = l.filters;
  LayerCycles r;
  r.name = l.name;
  int64_t per_fold = 0;
  switch (df) {
    case Dataflow::ws: r.sr = kw; r.sc = m; r.t = np; break;
    case Dataflow::os: r.sr = np; r.sc = m; r.t = kw; break;
    case Dataflow::is: r.sr = kw; r.sc = np; r.t = m; break;
  }
  per_fold = add(add(df == Dataflow::os ? rows : 2 * rows, cols), r.t - 2);
  r.folds = mul(cdiv(r.sr, rows), cdiv(r.sc, cols));
  r.cycles = mul(r.folds, per_fold) - 1;
  r.macs = static_cast<double>(np) * kw * m;
  r.utilization = r.macs / (static_cast<double>(rows) * cols * r.cycles);
  return r;
}

}  // namespace xpusim::tpu
