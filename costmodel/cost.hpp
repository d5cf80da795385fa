// Cost formulas: time to a target, billed dollars, throughput per dollar, energy, owned
// hardware and buy-vs-rent break-even. Pure functions of their inputs (no catalogs), so
// validation and tests can call them with hand-picked numbers. docs/cost-model.md derives them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "costmodel/convergence.hpp"
#include "costmodel/pricing.hpp"

namespace xpusim::cost {

// Training seconds for `epochs` over `train_examples` at `throughput_samples_per_s`, plus
// one-off start-up/compile seconds and evaluation seconds per epoch.
double seconds_to_target(double throughput_samples_per_s, double epochs, int64_t train_examples,
                         double startup_s = 0, double eval_s_per_epoch = 0);
double hours_to_target(double throughput_samples_per_s, double epochs, int64_t train_examples,
                       double startup_s = 0, double eval_s_per_epoch = 0);

// Dollars of one run of `run_s` seconds at `usd_per_h` under `billing`.
double cost_usd(double run_s, double usd_per_h, const BillingRule& billing);

// The RiseML metric "images/s per $/h" (samples/s per USD/h).
double images_per_s_per_usd_per_h(double throughput_samples_per_s, double usd_per_h);

// One job's time on a placement relative to the same job on a baseline placement (the
// *_relative_to_k80 figures of Max Woolf's 2017 study): the epochs and examples are the
// same on both sides, so the ratio of whole-training times is the inverse throughput ratio.
double time_relative(double throughput_samples_per_s, double baseline_throughput_samples_per_s);
// Same for dollars: the time ratio times the ratio of the two hourly prices (each side paid
// for its own training time at its own rate, no billing increments).
double cost_relative(double throughput_samples_per_s, double usd_per_h, double baseline_throughput_samples_per_s,
                     double baseline_usd_per_h);

// Energy of `run_s` seconds at `power_w`, kWh.
double energy_kwh(double run_s, double power_w);

// Buy vs rent: runs after which buying (purchase + electricity per run) costs less than
// renting (rented cost per run). nullopt when renting is never dearer.
std::optional<double> breakeven_runs(double purchase_usd, double owned_electricity_usd_per_run,
                                     double rented_usd_per_run);
// Same in busy hours, for equal-speed hardware: purchase / (rent/h - electricity/h).
std::optional<double> breakeven_hours(double purchase_usd, double rent_usd_per_h, double electricity_usd_per_h);

// --- Catalog-backed API: the one place time and cost to a target are computed. `xpusim
// validate` calls it for every cost-based metric (epochs_to_top1_X, hours_to_top5_X,
// minutes_to_top1_X, cost_to_top1_X, images_per_s_per_usd_per_h, time_relative_to_k80,
// cost_relative_to_k80). See costmodel/README.md.
struct CostQuery {
  std::string model;                 // zoo name, as in the convergence catalog
  std::string dataset;               // configs/datasets.yaml
  std::string metric = "top1";       // top1 | top5
  double accuracy = 0;               // fraction; 0 = use `epochs`
  double epochs = 0;                 // fixed budget when accuracy == 0
  int64_t global_batch = 0;          // 0 = the curve's own batch
  std::string precision;             // picks the curve trained in it, when several exist
  std::string curve;                 // a curve name; empty = best match
  double throughput_samples_per_s = 0;
  std::string offer;                 // price catalog id; empty = no dollars
  PricingTier tier = PricingTier::on_demand;
  double startup_s = 0;
  double eval_s_per_epoch = 0;
};

struct CostResult {
  double epochs = 0;
  double seconds = 0;
  double hours = 0;
  std::optional<double> usd_per_h;
  std::optional<double> billed_hours;
  std::optional<double> cost_usd;    // billed: the offer's increments and minimum applied
  // hours x $/h without billing increments or minimum: how published cost-to-accuracy
  // figures (RiseML 2018, DAWNBench) are stated, and what validation compares them with.
  std::optional<double> usage_cost_usd;
  std::optional<double> images_per_s_per_usd_per_h;
  std::optional<double> energy_kwh;  // from the offer's device power
  std::string curve;                 // the curve used, if any
};

// Throws UserError (unknown offer/model/dataset, unreachable accuracy with the best known).
// The catalogs default to configs/pricing and configs/convergence; tests pass their own.
CostResult evaluate_cost(const CostQuery& q);
CostResult evaluate_cost(const CostQuery& q, const PriceCatalog& prices, const ConvergenceCatalog& curves);
// Epochs to `accuracy` on the best-matching curve (same rules as evaluate_cost).
double epochs_to_target(const std::string& model, const std::string& dataset, const std::string& metric,
                        double accuracy, int64_t global_batch = 0, const std::string& precision = "");
double epochs_to_target(const ConvergenceCatalog& curves, const std::string& model, const std::string& dataset,
                        const std::string& metric, double accuracy, int64_t global_batch,
                        const std::string& precision);
double cost_to_target_usd(const CostQuery& q);
// When the epochs-to-target for this query are read straight off a published curve point
// (same global batch, the target is one of the curve's points), the curve and file:line it
// comes from; empty when the figure is interpolated or extrapolated (a real prediction).
std::string epochs_input_source(const std::string& model, const std::string& dataset, const std::string& metric,
                                double accuracy, int64_t global_batch, const std::string& precision = "");
std::string epochs_input_source(const ConvergenceCatalog& curves, const std::string& model,
                                const std::string& dataset, const std::string& metric, double accuracy,
                                int64_t global_batch, const std::string& precision);

}  // namespace xpusim::cost
