// The one cost function (see target_cost.hpp); the formulas are those of cost.hpp.
#include "costmodel/target_cost.hpp"

#include "common/error.hpp"
#include "costmodel/cost.hpp"
#include "engine/platform_spec.hpp"

namespace xpusim::cost {

TargetCost cost_to_target(const StudyOption& o, const StudyTarget* target, const OptionSpeed& speed) {
  return cost_to_target(o, target, speed, default_price_catalog(), default_convergence_catalog());
}

TargetCost cost_to_target(const StudyOption& o, const StudyTarget* target, const OptionSpeed& speed,
                          const PriceCatalog& prices, const ConvergenceCatalog& curves) {
  TargetCost c;
  auto fail = [&](const std::string& why) {
    if (c.note.empty()) c.note = why;
  };
  if (!o.offer.empty()) {
    c.usd_per_h = prices.usd_per_h(o.offer, o.tier) * o.offer_instances;
    if (speed.samples_per_s && *c.usd_per_h > 0)
      c.samples_per_s_per_usd_per_h = images_per_s_per_usd_per_h(*speed.samples_per_s, *c.usd_per_h);
  }
  // Power for energy: the option's own figure (0: no energy), else the modelled one, else the
  // offer's nameplate power (docs/power.md).
  if (o.power_w) {
    if (*o.power_w > 0) c.power_w = *o.power_w, c.power_source = "option";
  } else if (speed.modelled_power_w && *speed.modelled_power_w > 0) {
    c.power_w = *speed.modelled_power_w, c.power_source = "modelled";
  } else if (!o.offer.empty() && prices.get(o.offer).power_w() > 0) {
    c.power_w = prices.get(o.offer).power_w() * o.offer_instances, c.power_source = "offer";
  }
  if (!target) return c;
  const StudyTarget& t = *target;

  // Epochs to the target (inference: passes over the dataset; an accuracy is not its to reach).
  if (t.accuracy > 0 && o.task == Task::inference) {
    fail("inference reaches no accuracy (give the target in epochs: passes over the dataset)");
    return c;
  } else if (t.accuracy > 0) {
    const ConvergenceCurve* curve =
        o.convergence.empty() ? curves.best(t.model, t.dataset, t.metric, precision_name(o.precision), speed.global_batch)
                              : curves.find(o.convergence);
    if (!curve) {
      fail("no convergence data for " + t.model + " on " + t.dataset + " (" + t.metric + ")");
      return c;
    }
    c.curve = curve->name;
    try {
      c.epochs = epochs_to_target(*curve, t.accuracy, speed.global_batch);
    } catch (const UserError& e) {
      fail(e.what());
    }
  } else {
    c.epochs = t.epochs;
  }

  // Time, dollars, energy. Synthetic data measures speed only: no model trains on it.
  if (o.data == DataSource::synthetic) {
    fail(o.task == Task::inference ? "synthetic data: throughput and price only (scoring a dataset needs real data)"
                                   : "synthetic data: throughput and price only (training to a target needs real data)");
  } else if (speed.samples_per_s && c.epochs) {
    DatasetSpec ds = find_dataset(t.dataset);
    double secs = seconds_to_target(*speed.samples_per_s, *c.epochs, ds.train_examples, o.startup_s, o.eval_s_per_epoch);
    c.seconds = secs;
    c.hours = secs / 3600.0;
    if (!o.offer.empty()) {
      c.billed_hours = (o.billing_prorated ? secs : billed_seconds(secs, prices.get(o.offer).billing)) / 3600.0;
      c.cost_usd = *c.billed_hours * *c.usd_per_h;
      c.usage_cost_usd = *c.hours * *c.usd_per_h;
    }
    if (c.power_w) c.energy_kwh = energy_kwh(secs, *c.power_w);
  }
  return c;
}

}  // namespace xpusim::cost
