// SCALE-Sim v2 operand mapping, per its compute modules (systolic_compute_{ws,os,is}.py):
// with ofmap pixels Np = H' x W', window size Kw = Fh x Fw x C and M filters,
//   ws: Sr = Kw, Sc = M,  T = Np      os: Sr = Np, Sc = M, T = Kw      is: Sr = Kw, Sc = Np, T = M
// folds = ceil(Sr / R) x ceil(Sc / C); H' = ceil((H - Fh + S) / S) as in its topology reader.
#include "sim/tpu/scalesim.hpp"

#include <fstream>
#include <sstream>

#include "common/error.hpp"

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
  std::ifstream in(path);
  if (!in) throw FieldError("topology", "cannot open '" + path + "'");
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
  auto cdiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  int64_t oh = cdiv(l.ifmap_h - l.filter_h + l.stride, l.stride);
  int64_t ow = cdiv(l.ifmap_w - l.filter_w + l.stride, l.stride);
  int64_t np = oh * ow, kw = l.filter_h * l.filter_w * l.channels, m = l.filters;
  LayerCycles r;
  r.name = l.name;
  int64_t per_fold = 0;
  switch (df) {
    case Dataflow::ws: r.sr = kw; r.sc = m; r.t = np; break;
    case Dataflow::os: r.sr = np; r.sc = m; r.t = kw; break;
    case Dataflow::is: r.sr = kw; r.sc = np; r.t = m; break;
  }
  per_fold = (df == Dataflow::os ? rows : 2 * rows) + cols + r.t - 2;
  r.folds = cdiv(r.sr, rows) * cdiv(r.sc, cols);
  r.cycles = r.folds * per_fold - 1;
  r.macs = static_cast<double>(np) * kw * m;
  r.utilization = r.macs / (static_cast<double>(rows) * cols * r.cycles);
  return r;
}

}  // namespace xpusim::tpu
