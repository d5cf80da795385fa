// Convergence: how many epochs a model needs to reach a target accuracy. Curves (accuracy by
// epoch at one global batch) come from published runs (configs/convergence/*.yaml) or from
// xpusim's own training logs (the TSV `xpusim train` writes). Other batch sizes follow the
// empirical large-batch model of McCandlish et al. 2018 ("An Empirical Model of Large-Batch
// Training", arXiv:1812.06162, eq. 2.11): steps S = S_min (1 + B_noise / B), so epochs
// E = S B / N = E_min (1 + B / B_noise): below B_noise extra batch is nearly free in epochs,
// beyond it epochs grow linearly.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace xpusim::cost {

struct AccuracyPoint {
  double epoch = 0;
  double accuracy = 0;  // fraction in (0, 1]
};

struct ConvergenceCurve {
  std::string name;
  std::string model;
  std::string dataset;
  std::string metric = "top1";         // top1 | top5
  std::string precision;               // as trained (informational; empty = any)
  int64_t global_batch = 0;            // batch the curve was measured at
  std::optional<double> noise_scale_batch;  // B_noise for batch extrapolation; absent = none
  std::string source;
  std::string file;
  int line = 0;
  std::vector<AccuracyPoint> points;   // epoch ascending
  std::string where() const { return file + ":" + std::to_string(line); }
  double best_accuracy() const;
  double best_epoch() const;           // first epoch reaching best_accuracy()
};

// Epochs at which the curve first reaches `accuracy`, linearly interpolated between points
// (and from (0, 0) before the first point). nullopt when the curve never reaches it.
std::optional<double> epochs_on_curve(const ConvergenceCurve& c, double accuracy);

// McCandlish et al. 2018: epochs at batch B relative to the curve's batch B0,
// (1 + B / B_noise) / (1 + B0 / B_noise).
double batch_epoch_factor(double batch, double curve_batch, double noise_scale_batch);

// Epochs to `accuracy` at `global_batch`; UserError when unreachable (says the best accuracy
// known and where) or when the batch differs and the curve has no noise_scale_batch.
double epochs_to_target(const ConvergenceCurve& c, double accuracy, int64_t global_batch);

// A number for messages: up to 4 significant digits, no trailing zeros (0.757, 84).
std::string fmt_short(double v);

// Reads the TSV that `xpusim train` writes: header `epoch	seconds	train_loss	test_accuracy`,
// then one row per epoch. Accuracies above 1 are taken as percent.
std::vector<AccuracyPoint> read_train_log(const std::string& path);

struct ConvergenceCatalog {
  std::vector<ConvergenceCurve> curves;
  const ConvergenceCurve* find(const std::string& name) const;
  // Curves for model/dataset/metric, in file order.
  std::vector<const ConvergenceCurve*> matching(const std::string& model, const std::string& dataset,
                                                const std::string& metric) const;
  // Best match: same precision first, then the closest batch (log ratio). nullptr if none.
  const ConvergenceCurve* best(const std::string& model, const std::string& dataset, const std::string& metric,
                               const std::string& precision, int64_t global_batch) const;
  std::string names() const;
};

// Every *.yaml in DIR (default <config_dir>/convergence), sorted by file name.
ConvergenceCatalog load_convergence_catalog(const std::string& dir = "");
const ConvergenceCatalog& default_convergence_catalog();

}  // namespace xpusim::cost
