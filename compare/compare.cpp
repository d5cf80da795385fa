// Study evaluation: throughput per option (given, predicted or measured), then epochs, hours,
// dollars and energy per target from the one cost function (costmodel/target_cost.hpp).
#include "compare/compare.hpp"

#include <map>

#include "common/error.hpp"
#include "common/output.hpp"
#include "common/progress.hpp"
#include "costmodel/convergence.hpp"
#include "costmodel/cost.hpp"
#include "costmodel/target_cost.hpp"
#include "engine/platform_spec.hpp"

namespace xpusim::cost {

namespace {

nlohmann::json opt_json(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

// Data-parallel replicas of an option's placement, as its engine resolves it: every GPU and
// TPU core is a replica; the vCPUs of one CPU machine are one worker.
int option_replicas(const StudyOption& o) {
  return resolve_placement(o.placement, cached_engine(engine_for_device(o.placement.device))).replicas;
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
  j["offer_date"] = offer_date;
  j["offer_source"] = offer_source;
  j["offer_instances"] = offer_instances;
  j["offer_choice"] = offer_choice.empty() ? nlohmann::json(nullptr) : nlohmann::json(offer_choice);
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
  j["gpu_util_pct_smi"] = opt_json(gpu_util_pct_smi);
  j["gpu_mem_used_bytes"] = opt_json(gpu_mem_used_bytes);
  j["gpu_power_w"] = opt_json(gpu_power_w);
  j["cpu_util_pct"] = opt_json(cpu_util_pct);
  j["error"] = error.empty() ? nlohmann::json(nullptr) : nlohmann::json(error);
  j["note"] = note.empty() ? nlohmann::json(nullptr) : nlohmann::json(note);
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
  OptionSpeed speed;
  speed.samples_per_s = row.throughput_samples_per_s;
  speed.global_batch = row.global_batch;
  speed.modelled_power_w = row.power_w;
  TargetCost c = cost_to_target(o, target, speed);
  row.price_usd_per_h = c.usd_per_h;
  row.samples_per_s_per_usd_per_h = c.samples_per_s_per_usd_per_h;
  row.power_w = c.power_w;
  row.power_source = c.power_source;
  row.curve = c.curve;
  row.epochs_to_target = c.epochs;
  row.hours_to_target = c.hours;
  row.billed_hours = c.billed_hours;
  row.cost_to_target_usd = c.cost_usd;
  row.energy_kwh = c.energy_kwh;
  if (row.note.empty()) row.note = c.note;
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
    std::string error;  // the prediction or placement failed
    std::string note;   // it ran, but gives no speed to cost (does not fit)
    std::string bottleneck;
    double power_w = 0;  // modelled (docs/power.md); 0 = none
    // The step's monitoring readings (predict/monitoring.hpp), when the engine reports them.
    std::optional<double> gpu_util_pct_smi, gpu_mem_used_bytes, gpu_power_w, cpu_util_pct;
    double compile_time_s = 0;  // the prediction's one-off graph build / compile (first epoch)
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
      row.device = o.placement.device;
      row.count = o.placement.count;
      row.system = o.placement.system;
      row.precision = precision_name(o.precision);
      row.task = o.task;
      row.data = data_source_name(o.data);
      row.offer = o.offer;
      row.pricing = tier_name(o.tier);
      row.offer_date = prices.get(o.offer).date;
      row.offer_source = prices.get(o.offer).source;
      row.offer_instances = o.offer_instances;
      row.offer_choice = o.offer_choice;
      row.throughput_source = throughput_source_name(o.source);
      row.target_metric = t.accuracy > 0 ? t.metric : "epochs";
      row.target_accuracy = t.accuracy;
      row.batch_per_device = o.batch_per_device > 0 ? o.batch_per_device : t.batch_per_device;
      // Until a placement is resolved (or when it cannot be), the requested devices.
      row.global_batch = row.batch_per_device * o.placement.count;

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
          req.precision = precision_name(o.precision);
          req.task = o.task;
          req.data = o.data;
          req.placement = o.placement;
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
            // An option that runs out of memory has no speed to headline or hours to bill: its
            // throughput is dropped (the summary then neither ranks nor costs it) and the row
            // says why (issue 31).
            if (!rep.fits_in_memory) {
              tp.value.reset();
              tp.note = "does not fit in device memory (" + fmt_sig(rep.memory_bytes / 1e9, 3) + " GB needed per device, " +
                         fmt_sig(rep.memory_capacity_bytes / 1e9, 3) + " GB available): not costed";
            } else {
              // A run that does not start shows nothing on nvidia-smi or top either.
              tp.gpu_util_pct_smi = rep.extra_number("gpu_util_pct_smi");
              tp.gpu_mem_used_bytes = rep.extra_number("gpu_mem_used_bytes");
              tp.gpu_power_w = rep.extra_number("gpu_power_w");
              tp.cpu_util_pct = rep.extra_number("cpu_util_pct");
            }
            tp.compile_time_s = rep.compile_time_s;
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
      row.note = tp.note;
      row.bottleneck = tp.bottleneck;
      if (tp.power_w > 0) row.power_w = tp.power_w;
      row.gpu_util_pct_smi = tp.gpu_util_pct_smi;
      row.gpu_mem_used_bytes = tp.gpu_mem_used_bytes;
      row.gpu_power_w = tp.gpu_power_w;
      row.cpu_util_pct = tp.cpu_util_pct;

      // An option that gives no startup_s starts up as its prediction says (the framework
      // profile's compile_base_s: graph build, XLA compile), so a study bills the first epoch's
      // compile the published totals include.
      if (!o.startup_given && tp.compile_time_s > 0) {
        StudyOption with_startup = o;
        with_startup.startup_s = tp.compile_time_s;
        price_row(with_startup, &t, row);
      } else {
        price_row(o, &t, row);
      }
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
