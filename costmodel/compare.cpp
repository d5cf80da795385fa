// Study evaluation: throughput per option (given, predicted or measured), then epochs, hours,
// dollars and energy per target via the formulas of cost.hpp.
#include "costmodel/compare.hpp"

#include <map>

#include "common/error.hpp"
#include "common/progress.hpp"
#include "costmodel/convergence.hpp"
#include "costmodel/cost.hpp"
#include "engine/platform_spec.hpp"

namespace xpusim::cost {

namespace {

nlohmann::json opt_json(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

// Data-parallel replicas of an option's placement, as its engine resolves it: every GPU and
// TPU core is a replica; the vCPUs of one CPU machine are one worker.
int option_replicas(const StudyOption& o) {
  Placement p;
  p.device = o.device;
  p.count = o.count;
  p.system = o.system;
  p.overrides = o.overrides;
  if (!o.build.empty()) {
    CpuBuild b;
    if (parse_cpu_build(o.build, b)) p.build = b;
  }
  return resolve_placement(p, cached_engine(engine_for_device(o.device))).replicas;
}

}  // namespace

nlohmann::json CompareRow::to_json() const {
  nlohmann::json j;
  j["option"] = option;
  j["target"] = target;
  j["model"] = model;
  j["dataset"] = dataset;
  j["device"] = device;
  j["count"] = count;
  j["system"] = system;
  j["precision"] = precision;
  if (task == Task::inference) j["task"] = task_name(task);
  j["data"] = data;
  j["batch_per_device"] = batch_per_device;
  j["global_batch"] = global_batch;
  j["offer"] = offer;
  j["pricing"] = pricing;
  j["throughput_source"] = throughput_source;
  j["target_metric"] = target_metric;
  j["target_accuracy"] = target_accuracy > 0 ? nlohmann::json(target_accuracy) : nlohmann::json(nullptr);
  j["convergence_curve"] = curve.empty() ? nlohmann::json(nullptr) : nlohmann::json(curve);
  j["bottleneck"] = bottleneck.empty() ? nlohmann::json(nullptr) : nlohmann::json(bottleneck);
  j["throughput_samples_per_s"] = opt_json(throughput_samples_per_s);
  if (throughput_tokens_per_s) j["throughput_tokens_per_s"] = *throughput_tokens_per_s;
  j["price_usd_per_h"] = opt_json(price_usd_per_h);
  j["samples_per_s_per_usd_per_h"] = opt_json(samples_per_s_per_usd_per_h);
  j["epochs_to_target"] = opt_json(epochs_to_target);
  j["hours_to_target"] = opt_json(hours_to_target);
  j["billed_hours"] = opt_json(billed_hours);
  j["cost_to_target_usd"] = opt_json(cost_to_target_usd);
  j["power_w"] = opt_json(power_w);
  j["power_source"] = power_source.empty() ? nlohmann::json(nullptr) : nlohmann::json(power_source);
  j["energy_kwh"] = opt_json(energy_kwh);
  j["breakeven_runs"] = opt_json(breakeven_runs);
  j["error"] = error.empty() ? nlohmann::json(nullptr) : nlohmann::json(error);
  return j;
}

nlohmann::json CompareResult::to_json() const {
  nlohmann::json j;
  j["study"] = study;
  j["description"] = description;
  j["source"] = source;
  j["rows"] = nlohmann::json::array();
  for (const auto& r : rows) j["rows"].push_back(r.to_json());
  return j;
}

void price_row(const StudyOption& o, const StudyTarget* target, CompareRow& row) {
  const PriceCatalog& prices = default_price_catalog();
  const ConvergenceCatalog& curves = default_convergence_catalog();
  // Price (a study's is always known: checked when it was loaded; a sweep may leave it out).
  if (!o.offer.empty()) {
    row.price_usd_per_h = prices.usd_per_h(o.offer, o.tier);
    if (row.throughput_samples_per_s && *row.price_usd_per_h > 0)
      row.samples_per_s_per_usd_per_h = images_per_s_per_usd_per_h(*row.throughput_samples_per_s, *row.price_usd_per_h);
  }
  // Power for energy: the option's own figure (0: no energy), else the modelled one the row
  // came with, else the offer's nameplate power (docs/power.md).
  const std::optional<double> modelled_w = row.power_w;
  row.power_w.reset();
  row.power_source.clear();
  if (o.power_w) {
    if (*o.power_w > 0) row.power_w = *o.power_w, row.power_source = "option";
  } else if (modelled_w && *modelled_w > 0) {
    row.power_w = *modelled_w, row.power_source = "modelled";
  } else if (!o.offer.empty() && prices.get(o.offer).power_w() > 0) {
    row.power_w = prices.get(o.offer).power_w(), row.power_source = "offer";
  }
  if (!target) return;
  const StudyTarget& t = *target;

  // Epochs to the target (inference: passes over the dataset; an accuracy is not its to reach).
  if (t.accuracy > 0 && o.task == Task::inference) {
    if (row.error.empty()) row.error = "inference reaches no accuracy (give the target in epochs: passes over the dataset)";
    return;
  } else if (t.accuracy > 0) {
    const ConvergenceCurve* c = o.convergence.empty()
                                    ? curves.best(t.model, t.dataset, t.metric, o.precision, row.global_batch)
                                    : curves.find(o.convergence);
    if (!c) {
      if (row.error.empty()) row.error = "no convergence data for " + t.model + " on " + t.dataset + " (" + t.metric + ")";
      return;
    }
    row.curve = c->name;
    try {
      row.epochs_to_target = cost::epochs_to_target(*c, t.accuracy, row.global_batch);
    } catch (const UserError& e) {
      if (row.error.empty()) row.error = e.what();
    }
  } else {
    row.epochs_to_target = t.epochs;
  }

  // Time, dollars, energy. Synthetic data measures speed only: no model trains on it.
  if (o.data == "synthetic") {
    if (row.error.empty())
      row.error = o.task == Task::inference
                      ? "synthetic data: throughput and price only (scoring a dataset needs real data)"
                      : "synthetic data: throughput and price only (training to a target needs real data)";
  } else if (row.throughput_samples_per_s && row.epochs_to_target) {
    DatasetSpec ds = find_dataset(t.dataset);
    double secs = seconds_to_target(*row.throughput_samples_per_s, *row.epochs_to_target, ds.train_examples,
                                    o.startup_s, o.eval_s_per_epoch);
    row.hours_to_target = secs / 3600.0;
    if (!o.offer.empty()) {
      const PriceOffer& off = prices.get(o.offer);
      row.billed_hours = billed_seconds(secs, off.billing) / 3600.0;
      row.cost_to_target_usd = *row.billed_hours * *row.price_usd_per_h;
    }
    if (row.power_w) row.energy_kwh = cost::energy_kwh(secs, *row.power_w);
  }
}

CompareResult run_study(const Study& s, const ThroughputFn& fn_in, bool progress, const StudyRunControl& control) {
  ThroughputFn fn = fn_in ? fn_in : ThroughputFn([](const PredictRequest& r) { return predict(r); });
  const PriceCatalog& prices = default_price_catalog();
  CompareResult out{s.name, s.description, s.source, {}};
  out.total_rows = s.options.size() * s.targets.size();
  if (control.done.size() > out.total_rows)
    throw UserError("the earlier run has " + std::to_string(control.done.size()) + " rows, the study " +
                    std::to_string(out.total_rows));

  long long to_run = 0;
  for (const auto& o : s.options)
    if (o.source != ThroughputSource::given) to_run += static_cast<long long>(s.targets.size());
  ProgressBar bar("compare " + s.name, to_run, progress && to_run > 0);
  long long done = 0;
  // One throughput per (option, model, batch): targets of the same model share it.
  struct Tp {
    std::optional<double> value;
    int64_t global_batch = 0;
    double tokens_per_sample = 0;  // token-wise sequence models
    std::string error;
    std::string bottleneck;
    double power_w = 0;  // modelled (docs/power.md); 0 = none
  };
  std::map<std::string, Tp> cache;

  for (const auto& o : s.options) {
    for (const auto& t : s.targets) {
      if (out.rows.size() < control.done.size()) {
        // Finished in an earlier run: kept as it is (its numbers are exact in the row file).
        const CompareRow& prev = control.done[out.rows.size()];
        if (prev.option != o.label || prev.target != t.label)
          throw UserError("row " + std::to_string(out.rows.size() + 1) + " of the earlier run is " + prev.option +
                          " x " + prev.target + ", the study's is " + o.label + " x " + t.label);
        out.rows.push_back(prev);
        ++out.resumed_rows;
        if (o.source != ThroughputSource::given) bar.update(++done, o.label);
        continue;
      }
      if (control.stop && control.stop->load()) {
        out.interrupted = true;
        break;
      }
      CompareRow row;
      row.option = o.label;
      row.target = t.label;
      row.model = t.model;
      row.dataset = t.dataset;
      row.device = o.device;
      row.count = o.count;
      row.system = o.system;
      row.precision = o.precision;
      row.task = o.task;
      row.data = o.data;
      row.offer = o.offer;
      row.pricing = tier_name(o.tier);
      row.throughput_source = throughput_source_name(o.source);
      row.target_metric = t.accuracy > 0 ? t.metric : "epochs";
      row.target_accuracy = t.accuracy;
      row.batch_per_device = o.batch_per_device > 0 ? o.batch_per_device : t.batch_per_device;
      // Until a placement is resolved (or when it cannot be), the requested devices.
      row.global_batch = row.batch_per_device * o.count;

      // Throughput.
      std::string key = o.label + "|" + t.model + "|" + std::to_string(row.batch_per_device);  // one task per option
      if (!cache.count(key)) {
        Tp tp;
        if (o.source == ThroughputSource::given) {
          tp.value = o.given_throughput;
          tp.global_batch = row.global_batch;
          try {
            tp.global_batch = row.batch_per_device * option_replicas(o);
          } catch (const std::exception& e) {
            tp.error = std::string("placement failed: ") + e.what();
          }
        } else {
          PredictRequest req;
          req.model = t.model;
          req.batch_per_device = row.batch_per_device;
          req.precision = o.precision;
          req.task = o.task;
          req.data = o.data == "real" ? DataSource::real : DataSource::synthetic;
          req.placement.device = o.device;
          req.placement.count = o.count;
          req.placement.system = o.system;
          if (!o.build.empty()) {
            CpuBuild b;
            if (parse_cpu_build(o.build, b)) req.placement.build = b;
          }
          req.placement.overrides = o.overrides;
          req.placement.framework = o.framework;
          if (o.source == ThroughputSource::measured) {
            req.engine = "cpu";
            req.steps = 5;
            req.warmup = 1;
          }
          try {
            StepReport rep = fn(req);
            if (!(rep.throughput_samples_per_s > 0))
              tp.error = std::string(o.source == ThroughputSource::measured ? "measurement" : "prediction") +
                         " returned no throughput";
            else
              tp.value = rep.throughput_samples_per_s;
            tp.bottleneck = resource_name(rep.bottleneck);
            tp.power_w = rep.power_w;
            if (rep.throughput_tokens_per_s > 0 && rep.throughput_samples_per_s > 0)
              tp.tokens_per_sample = rep.throughput_tokens_per_s / rep.throughput_samples_per_s;
            tp.global_batch = rep.global_batch > 0 ? rep.global_batch : row.global_batch;
            if (!rep.fits_in_memory) tp.error = "does not fit in device memory (" + std::to_string(rep.memory_bytes) + " bytes)";
          } catch (const std::exception& e) {
            tp.error = std::string(o.source == ThroughputSource::measured ? "measurement" : "prediction") +
                       " failed: " + e.what();
          }
          bar.update(++done, o.label);
        }
        cache[key] = tp;
      } else if (o.source != ThroughputSource::given) {
        bar.update(++done, o.label);
      }
      const Tp& tp = cache[key];
      row.global_batch = tp.global_batch;
      row.throughput_samples_per_s = tp.value;
      if (tp.value && tp.tokens_per_sample > 0) row.throughput_tokens_per_s = *tp.value * tp.tokens_per_sample;
      row.error = tp.error;
      row.bottleneck = tp.bottleneck;
      if (tp.power_w > 0) row.power_w = tp.power_w;

      price_row(o, &t, row);
      out.rows.push_back(row);
      if (control.on_row) control.on_row(out);
    }
    if (out.interrupted) break;
  }
  bar.finish(out.interrupted ? "interrupted" : "");
  if (out.interrupted) return out;

  // Buy vs rent: owned options against the named rented option, per target.
  if (!s.breakeven_against.empty()) {
    for (auto& r : out.rows) {
      const PriceOffer& off = prices.get(r.offer);
      if (!off.owned || !r.cost_to_target_usd) continue;
      for (const auto& ref : out.rows)
        if (ref.option == s.breakeven_against && ref.target == r.target && ref.cost_to_target_usd) {
          double elec = r.energy_kwh ? *r.energy_kwh * off.owned->electricity_usd_per_kwh : 0.0;
          r.breakeven_runs = cost::breakeven_runs(off.owned->purchase_usd, elec, *ref.cost_to_target_usd);
        }
    }
  }
  return out;
}

}  // namespace xpusim::cost
