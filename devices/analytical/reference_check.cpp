#include "devices/analytical/reference_check.hpp"

#include <cmath>
#include <fstream>

#include "common/error.hpp"
#include "common/progress.hpp"
#include "sim/predict.hpp"

namespace xpusim::analytical {

namespace {
// RFC 4180 fields: quoted fields may hold commas and doubled quotes.
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') cur += '"', ++i;
      else if (c == '"') quoted = false;
      else cur += c;
    } else if (c == '"') quoted = true;
    else if (c == ',') out.push_back(cur), cur.clear();
    else if (c != '\r') cur += c;
  }
  out.push_back(cur);
  return out;
}

bool is_analytical(const std::string& device) {
  try {
    return engine_for_device(device) == "analytical";
  } catch (const UserError&) {
    return false;  // a device another engine (or nobody yet) models
  }
}
}  // namespace

std::vector<ReferenceRow> load_reference_rows(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw UserError(path + ": cannot open reference CSV");
  std::string line;
  std::getline(f, line);
  std::vector<std::string> head = split_csv(line);
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < head.size(); ++i) col[head[i]] = i;
  for (const char* k : {"device", "num_devices", "setup", "framework", "model", "batch_per_device", "precision", "data",
                        "metric", "value"})
    if (!col.count(k)) throw UserError(path + ":1: " + k + ": missing column");
  std::vector<ReferenceRow> rows;
  std::map<std::string, bool> analytical;
  for (int ln = 2; std::getline(f, line); ++ln) {
    if (line.empty()) continue;
    std::vector<std::string> v = split_csv(line);
    if (v.size() < head.size()) throw UserError(path + ":" + std::to_string(ln) + ": expected " + std::to_string(head.size()) + " fields");
    if (v[col["metric"]] != "train_throughput") continue;
    ReferenceRow r;
    r.line = ln;
    r.device = v[col["device"]];
    if (!analytical.count(r.device)) analytical[r.device] = is_analytical(r.device);
    if (!analytical[r.device]) continue;
    r.setup = v[col["setup"]];
    r.framework = v[col["framework"]];
    r.model = v[col["model"]];
    r.precision = v[col["precision"]];
    r.data = v[col["data"]];
    try {
      r.num_devices = std::stoi(v[col["num_devices"]]);
      r.batch_per_device = std::stoll(v[col["batch_per_device"]]);
      r.value = std::stod(v[col["value"]]);
    } catch (const std::exception&) {
      throw UserError(path + ":" + std::to_string(ln) + ": num_devices/batch_per_device/value: not a number");
    }
    rows.push_back(r);
  }
  return rows;
}

std::vector<RowResult> check_rows(const std::vector<ReferenceRow>& rows,
                                  const std::map<std::string, std::vector<std::string>>& overrides, bool progress) {
  std::vector<RowResult> out;
  ProgressBar bar("reference rows", static_cast<long long>(rows.size()), progress);
  for (const auto& r : rows) {
    PredictRequest q;
    q.model = r.model;
    q.batch_per_device = r.batch_per_device;
    q.precision = r.precision;
    q.data = r.data == "real" ? DataSource::real : DataSource::synthetic;
    q.placement.device = r.device;
    q.placement.count = r.num_devices;
    q.placement.system = r.setup;
    auto ends = [&](const std::string& s) {
      return r.framework.size() >= s.size() && r.framework.compare(r.framework.size() - s.size(), s.size(), s) == 0;
    };
    if (ends("-pip")) q.placement.build = "pip";
    if (ends("-compiled")) q.placement.build = "compiled";
    auto it = overrides.find(r.device);
    if (it != overrides.end()) q.placement.overrides = it->second;
    StepReport rep = predict(q);
    RowResult res{r, rep.throughput_samples_per_s, 100.0 * (rep.throughput_samples_per_s - r.value) / r.value};
    out.push_back(res);
    bar.update(static_cast<long long>(out.size()));
  }
  bar.finish();
  return out;
}

std::map<std::string, double> mape_by_device(const std::vector<RowResult>& results) {
  std::map<std::string, std::pair<double, int>> acc;
  for (const auto& r : results) {
    acc[r.row.device].first += std::fabs(r.error_pct), acc[r.row.device].second++;
    acc["all"].first += std::fabs(r.error_pct), acc["all"].second++;
  }
  std::map<std::string, double> out;
  for (const auto& [k, v] : acc) out[k] = v.first / v.second;
  return out;
}

}  // namespace xpusim::analytical
