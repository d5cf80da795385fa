// Cost formulas (see docs/cost-model.md) and the catalog-backed query used by validation.
#include "costmodel/cost.hpp"

#include <cmath>

#include "common/error.hpp"
#include "costmodel/convergence.hpp"
#include "costmodel/target_cost.hpp"
#include "engine/platform_spec.hpp"

namespace xpusim::cost {

double seconds_to_target(double throughput, double epochs, int64_t train_examples, double startup_s,
                         double eval_s_per_epoch) {
  if (throughput <= 0) throw UserError("throughput must be > 0 samples/s");
  return epochs * double(train_examples) / throughput + startup_s + epochs * eval_s_per_epoch;
}

double hours_to_target(double throughput, double epochs, int64_t train_examples, double startup_s,
                       double eval_s_per_epoch) {
  return seconds_to_target(throughput, epochs, train_examples, startup_s, eval_s_per_epoch) / 3600.0;
}

double cost_usd(double run_s, double usd_per_h, const BillingRule& billing) {
  return billed_seconds(run_s, billing) / 3600.0 * usd_per_h;
}

double images_per_s_per_usd_per_h(double throughput, double usd_per_h) {
  if (usd_per_h <= 0) throw UserError("price must be > 0 USD/h for images/s per $/h");
  return throughput / usd_per_h;
}

double time_relative(double throughput, double baseline_throughput) {
  if (throughput <= 0 || baseline_throughput <= 0) throw UserError("throughput must be > 0 samples/s");
  return (1.0 / throughput) / (1.0 / baseline_throughput);
}

double cost_relative(double throughput, double usd_per_h, double baseline_throughput, double baseline_usd_per_h) {
  if (usd_per_h <= 0 || baseline_usd_per_h <= 0) throw UserError("price must be > 0 USD/h for a cost ratio");
  return time_relative(throughput, baseline_throughput) * (usd_per_h / baseline_usd_per_h);
}

double energy_kwh(double run_s, double power_w) { return power_w * run_s / 3600.0 / 1000.0; }

std::optional<double> breakeven_runs(double purchase_usd, double owned_electricity_usd_per_run,
                                     double rented_usd_per_run) {
  double saving = rented_usd_per_run - owned_electricity_usd_per_run;
  if (saving <= 0) return std::nullopt;
  return purchase_usd / saving;
}

std::optional<double> breakeven_hours(double purchase_usd, double rent_usd_per_h, double electricity_usd_per_h) {
  double saving = rent_usd_per_h - electricity_usd_per_h;
  if (saving <= 0) return std::nullopt;
  return purchase_usd / saving;
}

CostResult evaluate_cost(const CostQuery& q) {
  static const PriceCatalog no_prices;  // a query without an offer needs no price files
  return evaluate_cost(q, q.offer.empty() ? no_prices : default_price_catalog(), default_convergence_catalog());
}

CostResult evaluate_cost(const CostQuery& q, const PriceCatalog& pc, const ConvergenceCatalog& cat) {
  find_dataset(q.dataset);  // an unknown dataset is reported before anything else
  // The query as a study option and target, priced by the one cost function. The curve is
  // picked here, so that a missing one is reported with the curves that exist.
  StudyOption o;
  o.offer = q.offer;
  o.tier = q.tier;
  o.startup_s = q.startup_s;
  o.eval_s_per_epoch = q.eval_s_per_epoch;
  StudyTarget t;
  t.model = q.model;
  t.dataset = q.dataset;
  t.metric = q.metric;
  t.accuracy = q.accuracy;
  t.epochs = q.epochs;
  if (q.accuracy > 0) {
    const ConvergenceCurve* c = q.curve.empty() ? cat.best(q.model, q.dataset, q.metric, q.precision, q.global_batch)
                                                : cat.find(q.curve);
    if (!c)
      throw UserError(q.curve.empty() ? "no convergence curve for " + q.model + " on " + q.dataset + " (" + q.metric +
                                            "); known curves: " + cat.names()
                                      : "unknown convergence curve '" + q.curve + "' (known: " + cat.names() + ")");
    o.convergence = c->name;
  } else if (q.epochs <= 0) {
    throw UserError("cost query needs accuracy > 0 or epochs > 0");
  }
  OptionSpeed speed;
  speed.samples_per_s = q.throughput_samples_per_s;
  speed.global_batch = q.global_batch;
  TargetCost tc = cost_to_target(o, &t, speed, pc, cat);
  if (!tc.note.empty()) throw UserError(tc.note);
  CostResult r;
  r.curve = tc.curve;
  r.epochs = *tc.epochs;
  r.seconds = *tc.seconds;
  r.hours = *tc.hours;
  r.usd_per_h = tc.usd_per_h;
  r.billed_hours = tc.billed_hours;
  r.cost_usd = tc.cost_usd;
  r.usage_cost_usd = tc.usage_cost_usd;
  r.images_per_s_per_usd_per_h = tc.samples_per_s_per_usd_per_h;
  r.energy_kwh = tc.energy_kwh;
  return r;
}

double epochs_to_target(const std::string& model, const std::string& dataset, const std::string& metric,
                        double accuracy, int64_t global_batch, const std::string& precision) {
  return epochs_to_target(default_convergence_catalog(), model, dataset, metric, accuracy, global_batch, precision);
}

double epochs_to_target(const ConvergenceCatalog& cat, const std::string& model, const std::string& dataset,
                        const std::string& metric, double accuracy, int64_t global_batch,
                        const std::string& precision) {
  const ConvergenceCurve* c = cat.best(model, dataset, metric, precision, global_batch);
  if (!c) throw UserError("no convergence curve for " + model + " on " + dataset + " (" + metric + "); known curves: " + cat.names());
  return epochs_to_target(*c, accuracy, global_batch);
}

std::string epochs_input_source(const std::string& model, const std::string& dataset, const std::string& metric,
                                double accuracy, int64_t global_batch, const std::string& precision) {
  return epochs_input_source(default_convergence_catalog(), model, dataset, metric, accuracy, global_batch, precision);
}

std::string epochs_input_source(const ConvergenceCatalog& cat, const std::string& model, const std::string& dataset,
                                const std::string& metric, double accuracy, int64_t global_batch,
                                const std::string& precision) {
  const ConvergenceCurve* c = cat.best(model, dataset, metric, precision, global_batch);
  if (!c || (global_batch > 0 && global_batch != c->global_batch)) return {};
  // Name the file from its configs/ folder on: the same text from every checkout.
  std::string where = c->where();
  if (auto k = where.rfind("configs/"); k != std::string::npos) where = where.substr(k);
  for (const auto& p : c->points)
    if (std::abs(p.accuracy - accuracy) < 1e-9) return "curve '" + c->name + "' (" + where + ")";
  return {};
}

double cost_to_target_usd(const CostQuery& q) {
  CostResult r = evaluate_cost(q);
  if (!r.cost_usd) throw UserError("cost query names no price offer");
  return *r.cost_usd;
}

}  // namespace xpusim::cost
