// Convergence curves: loading (YAML points or `xpusim train` TSV logs), interpolation and
// the McCandlish et al. 2018 batch-size model.
#include "common/file_guard.hpp"
#include "costmodel/convergence.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <locale>
#include <sstream>

#include "common/error.hpp"
#include "common/output.hpp"
#include "common/spec_reader.hpp"
#include "common/config_paths.hpp"

namespace xpusim::cost {

// A child() result that is really there (yaml-cpp's null node converts to true).
inline bool present(const YAML::Node& n) { return n && n.IsDefined() && !n.IsNull(); }

namespace fs = std::filesystem;

double ConvergenceCurve::best_accuracy() const {
  double b = 0;
  for (const auto& p : points) b = std::max(b, p.accuracy);
  return b;
}

double ConvergenceCurve::best_epoch() const {
  double b = best_accuracy();
  for (const auto& p : points)
    if (p.accuracy >= b) return p.epoch;
  return 0;
}

std::optional<double> epochs_on_curve(const ConvergenceCurve& c, double accuracy) {
  AccuracyPoint prev{0, 0};
  for (const auto& p : c.points) {
    if (p.accuracy >= accuracy) {
      if (p.accuracy <= prev.accuracy) return p.epoch;
      double f = (accuracy - prev.accuracy) / (p.accuracy - prev.accuracy);
      return prev.epoch + std::clamp(f, 0.0, 1.0) * (p.epoch - prev.epoch);
    }
    if (p.accuracy > prev.accuracy) prev = p;  // accuracy can dip; interpolate from the best so far
    else prev.epoch = p.epoch;
  }
  return std::nullopt;
}

std::string fmt_short(double v) {
  std::ostringstream os;
  os.imbue(std::locale::classic());
  os << std::setprecision(4) << v;
  return os.str();
}

double batch_epoch_factor(double batch, double curve_batch, double noise_scale_batch) {
  return (1.0 + batch / noise_scale_batch) / (1.0 + curve_batch / noise_scale_batch);
}

double epochs_to_target(const ConvergenceCurve& c, double accuracy, int64_t global_batch) {
  auto e = epochs_on_curve(c, accuracy);
  if (!e)
    throw UserError("convergence curve '" + c.name + "' never reaches " + c.metric + " " + fmt_short(accuracy) +
                    "; the best accuracy known is " + fmt_short(c.best_accuracy()) + " at epoch " +
                    fmt_short(c.best_epoch()));
  if (global_batch == c.global_batch || global_batch <= 0) return *e;
  if (!c.noise_scale_batch)
    throw UserError("convergence curve '" + c.name + "' was measured at global batch " +
                    std::to_string(c.global_batch) + " and has no noise_scale_batch to extrapolate to batch " +
                    std::to_string(global_batch));
  return *e * batch_epoch_factor(double(global_batch), double(c.global_batch), *c.noise_scale_batch);
}

std::vector<AccuracyPoint> read_train_log(const std::string& path) {
  // A log is a file `xpusim train` wrote: a directory or a device (/dev/zero) is not one,
  // and reading a line from the latter would never end.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw UserError(path + ": training log not found or not a regular file");
  check_input_file(path, kMaxTextInputBytes);
  std::ifstream in(path);
  if (!in) throw UserError(path + ": cannot open training log");
  std::string line;
  int lineno = 0;
  int col_epoch = -1, col_acc = -1;
  std::vector<AccuracyPoint> out;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cols;
    std::stringstream ss(line);
    for (std::string f; std::getline(ss, f, '\t');) cols.push_back(f);
    if (col_epoch < 0) {  // header
      for (int i = 0; i < int(cols.size()); ++i) {
        if (cols[i] == "epoch") col_epoch = i;
        if (cols[i] == "test_accuracy") col_acc = i;
      }
      if (col_epoch < 0 || col_acc < 0)
        throw UserError(path + ":" + std::to_string(lineno) +
                        ": header: expected tab-separated columns epoch, seconds, train_loss, test_accuracy");
      continue;
    }
    if (int(cols.size()) <= std::max(col_epoch, col_acc))
      throw UserError(path + ":" + std::to_string(lineno) + ": expected " + std::to_string(std::max(col_epoch, col_acc) + 1) +
                      " tab-separated columns");
    AccuracyPoint p;
    try {
      size_t n1 = 0, n2 = 0;
      p.epoch = std::stod(cols[col_epoch], &n1);
      p.accuracy = std::stod(cols[col_acc], &n2);
      if (n1 != cols[col_epoch].size() || n2 != cols[col_acc].size()) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      throw UserError(path + ":" + std::to_string(lineno) + ": epoch/test_accuracy: expected numbers");
    }
    // stod takes "nan", "inf" and negatives: none is an epoch or an accuracy.
    if (!std::isfinite(p.epoch) || p.epoch < 0)
      throw UserError(path + ":" + std::to_string(lineno) + ": epoch: must be a finite number >= 0, got '" + cols[col_epoch] + "'");
    if (!std::isfinite(p.accuracy) || p.accuracy < 0 || p.accuracy > 100)
      throw UserError(path + ":" + std::to_string(lineno) +
                      ": test_accuracy: must be a fraction in [0, 1] or a percentage in (1, 100], got '" + cols[col_acc] + "'");
    if (p.accuracy > 1.0) p.accuracy /= 100.0;  // percent
    if (!out.empty() && p.epoch <= out.back().epoch)
      throw UserError(path + ":" + std::to_string(lineno) + ": epoch: must increase");
    out.push_back(p);
  }
  if (out.empty()) throw UserError(path + ": training log has no rows");
  return out;
}

const ConvergenceCurve* ConvergenceCatalog::find(const std::string& name) const {
  for (const auto& c : curves)
    if (c.name == name) return &c;
  return nullptr;
}

std::vector<const ConvergenceCurve*> ConvergenceCatalog::matching(const std::string& model, const std::string& dataset,
                                                                  const std::string& metric) const {
  std::vector<const ConvergenceCurve*> out;
  for (const auto& c : curves)
    if (c.model == model && c.dataset == dataset && c.metric == metric) out.push_back(&c);
  return out;
}

const ConvergenceCurve* ConvergenceCatalog::best(const std::string& model, const std::string& dataset,
                                                 const std::string& metric, const std::string& precision,
                                                 int64_t global_batch) const {
  const ConvergenceCurve* best = nullptr;
  double best_score = 0;
  for (const auto* c : matching(model, dataset, metric)) {
    double score = (c->precision == precision ? 0.0 : 100.0) +
                   (global_batch > 0 ? std::fabs(std::log(double(global_batch) / double(c->global_batch))) : 0.0);
    if (!best || score < best_score) best = c, best_score = score;
  }
  return best;
}

std::string ConvergenceCatalog::names() const {
  std::string s;
  for (const auto& c : curves) s += (s.empty() ? "" : ", ") + c.name;
  return s;
}

namespace {
void load_file(const std::string& path, ConvergenceCatalog& cat) {
  YAML::Node root = load_config_yaml(path);
  SpecReader top(root, path);
  std::string source = top.text("source", std::string(), "default source of the curves");
  top.text("note", std::string(), "free text");
  YAML::Node curves = top.child("curves", "list of accuracy-by-epoch curves", true);
  top.finish();
  if (!curves.IsSequence()) throw UserError(yaml_location(path, curves) + ": curves: expected a list");
  for (const auto& n : curves) {
    SpecReader r(n, path, "curves");
    ConvergenceCurve c;
    c.file = path;
    c.line = n.Mark().line + 1;
    c.name = r.text("name", std::nullopt, "curve name, unique");
    c.model = r.text("model", std::nullopt, "zoo model");
    c.dataset = r.text("dataset", std::nullopt, "dataset (configs/datasets.yaml)");
    c.metric = r.text("metric", std::string("top1"), "accuracy metric", {"top1", "top5"});
    c.precision = r.text("precision", std::string(), "precision it was trained in");
    c.global_batch = r.integer("global_batch", std::nullopt, "samples", "batch over all devices",
                               [](long long v) { return v > 0 ? "" : "must be > 0"; });
    if (r.has("noise_scale_batch"))
      c.noise_scale_batch = r.number("noise_scale_batch", std::nullopt, "samples",
                                     "B_noise of McCandlish et al. 2018 for this model/dataset",
                                     [](double v) { return v > 0 ? "" : "must be > 0"; });
    else
      r.number("noise_scale_batch", 0.0, "samples", "B_noise (absent = no batch extrapolation)");
    c.source = r.text("source", source.empty() ? std::nullopt : std::optional<std::string>(source), "where the curve comes from");
    r.text("note", std::string(), "free text");
    YAML::Node pts = r.child("points", "list of [epoch, accuracy]");
    std::string log = r.text("train_log", std::string(), "TSV written by `xpusim train` (relative to this file)");
    r.finish();
    if (present(pts) && !log.empty()) r.fail("train_log", "give either points or train_log, not both");
    if (!log.empty()) {
      fs::path p(log);
      if (p.is_relative()) p = fs::path(path).parent_path() / p;
      c.points = read_train_log(p.string());
    } else if (present(pts)) {
      if (!pts.IsSequence()) r.fail("points", "expected a list of [epoch, accuracy]");
      for (const auto& e : pts) {
        if (!e.IsSequence() || e.size() != 2)
          throw UserError(yaml_location(path, e) + ": curves.points: expected [epoch, accuracy]");
        AccuracyPoint a;
        try {
          a.epoch = e[0].as<double>();
          a.accuracy = e[1].as<double>();
          if (!std::isfinite(a.epoch) || !std::isfinite(a.accuracy)) throw YAML::Exception(e.Mark(), "not finite");
        } catch (const YAML::Exception&) {
          throw UserError(yaml_location(path, e) + ": curves.points: expected [epoch, accuracy] numbers");
        }
        if (a.accuracy <= 0 || a.accuracy > 1)
          throw UserError(yaml_location(path, e) + ": curves.points: accuracy is a fraction in (0, 1], got " + e[1].Scalar());
        if (!c.points.empty() && a.epoch <= c.points.back().epoch)
          throw UserError(yaml_location(path, e) + ": curves.points: epochs must increase");
        c.points.push_back(a);
      }
    } else {
      r.fail("points", "required: points or train_log");
    }
    if (c.points.empty()) r.fail("points", "must not be empty");
    if (cat.find(c.name))
      throw UserError(c.where() + ": curves.name: duplicate curve '" + c.name + "' (first at " + cat.find(c.name)->where() + ")");
    cat.curves.push_back(std::move(c));
  }
}
}  // namespace

ConvergenceCatalog load_convergence_catalog(const std::string& dir_in) {
  std::string dir = dir_in.empty() ? (fs::path(config_dir()) / "convergence").string() : dir_in;
  ConvergenceCatalog cat;
  if (!fs::is_directory(dir)) throw UserError(dir + ": convergence folder not found");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) load_file(f, cat);
  return cat;
}

const ConvergenceCatalog& default_convergence_catalog() {
  static const ConvergenceCatalog cat = load_convergence_catalog();
  return cat;
}

}  // namespace xpusim::cost
