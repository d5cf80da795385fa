#include "validation/validate.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>

#include "common/error.hpp"
#include "common/progress.hpp"
#include "costmodel/cost.hpp"
#include "engine/framework_spec.hpp"
#include "validation/framework_overlay.hpp"
#include "engine/platform_spec.hpp"
#include "models/zoo.hpp"
#include "models/zoo_seq_len.hpp"
#include "parallel/cluster.hpp"
#include "validation/cluster_rows.hpp"
#include "validation/cost_link.hpp"

namespace xpusim::validation {

namespace fs = std::filesystem;

namespace {

// A row cannot be evaluated: the reason becomes part of the output.
struct Skip {
  std::string reason;
};

bool config_exists(const std::string& kind, const std::string& name) {
  std::error_code ec;  // a name too long for the file system is simply not a config
  return fs::exists(resolve_config(kind, name), ec);
}

// One prediction per distinct request: many rows (throughput, epoch time, cost) share one.
class PredictionCache {
 public:
  PredictionCache(const ValidateOptions& o) : opts_(o) {}
  const StepReport& get(const PredictRequest& r) {
    std::string key = r.placement.device + "|" + std::to_string(r.placement.count) + "|" + r.placement.system + "|" +
                      (r.placement.build ? cpu_build_name(*r.placement.build) : "") + "|" + r.model + "|" + std::to_string(r.batch_per_device) + "|" +
                      std::to_string(r.seq_len) + "|" + r.dataset + "|" + std::to_string(r.global_batch) + "|" + r.precision + "|" + data_source_name(r.data) + "|" + r.engine + "|" + r.placement.framework +
                      (r.task == Task::inference ? "|inference" : "");
    for (const auto& o : r.placement.overrides) key += "|" + o;
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      Entry e;
      try {
        e.report = opts_.predict ? opts_.predict(r) : predict(r);
      } catch (const UserError& ex) {
        e.error = ex.what();
      } catch (const UnavailableError& ex) {
        e.error = std::string("unavailable: ") + ex.what();
      } catch (const std::exception& ex) {
        e.error = std::string("internal error: ") + ex.what();
      }
      it = cache_.emplace(key, std::move(e)).first;
    }
    if (!it->second.error.empty()) throw Skip{"engine failed: " + it->second.error};
    return it->second.report;
  }

 private:
  struct Entry {
    StepReport report;
    std::string error;
  };
  const ValidateOptions& opts_;
  std::map<std::string, Entry> cache_;
};

void check_identity(const ReferenceRow& row) {
  if (row.device.empty()) throw Skip{"device: missing"};
  if (!config_exists("devices", row.device)) throw Skip{"unknown device '" + row.device + "'"};
  if (!row.setup.empty() && !config_exists("systems", row.setup) && !parallel::cluster_exists(row.setup))
    throw Skip{"unknown system '" + row.setup + "'"};  // nor a cluster (configs/clusters/)
  if (!row.num_devices) throw Skip{"num_devices: missing"};
  if (row.model.empty()) throw Skip{"model: missing"};
  if (!config_exists("models", row.model)) throw Skip{"unknown model '" + row.model + "'"};
  // A cluster row (the large-model planner) may leave the micro-batch to the planner when it
  // gives the global batch.
  const bool planner_row = parallel::cluster_exists(row.setup) && row.step_global_batch();
  if (!row.batch_per_device && !planner_row) throw Skip{"batch_per_device: missing"};
  if (row.precision.empty()) throw Skip{"precision: missing"};
  Precision p;
  if (!parse_precision(row.precision, p)) throw Skip{"unknown precision '" + row.precision + "'"};
  if (row.data.empty()) throw Skip{"data: missing"};
  DataSource d;
  if (!parse_data_source(row.data, d)) throw Skip{"unknown data '" + row.data + "' (synthetic or real)"};
}

double compile_time_s(const StepReport& r) { return r.compile_time_s; }

}  // namespace

namespace {
// The profile a row's framework and stack version select (framework_spec.hpp, `versions:`), as
// the profile's file stem when the version picks another profile than the name alone; the
// name as written otherwise (a name no profile lists reaches predict, which reports it).
std::string row_framework(const ReferenceRow& row) {
  const std::string version = row.stack_version();
  if (row.framework.empty() || version.empty()) return row.framework;
  try {
    const std::string engine = engine_for_device(row.device);
    const std::string by_version = find_framework_file(row.framework, engine, version);
    if (by_version == find_framework_file(row.framework, engine)) return row.framework;
    return std::filesystem::path(by_version).stem().string();
  } catch (const UserError&) {
    return row.framework;
  }
}

// A reference row's dataset as configs/datasets.yaml names it, or "" (the model file's) when
// none is. The CSVs spell datasets as their sources do (`wikipedia+bookcorpus`, `squad_v1.1`).
std::string dataset_key(const std::string& csv_name) {
  std::string key;
  for (char c : csv_name)
    key += c == '+' || c == '.' || c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (key.empty() || !load_datasets().count(key)) return "";
  return key;
}
}  // namespace

PredictRequest request_for_row(const ReferenceRow& row) {
  PredictRequest q;
  q.model = row.model;
  q.batch_per_device = row.batch_per_device.value_or(0);
  q.seq_len = row.seq_len.value_or(0);
  q.dataset = dataset_key(row.dataset);
  // A row's global batch beyond batch x devices is gradient accumulation, from the column or
  // the row's own note (reference_csv.hpp); planner rows on a cluster take theirs in
  // cluster_rows.cpp.
  q.global_batch = row.step_global_batch().value_or(0);
  q.precision = row.precision;
  parse_data_source(row.data, q.data);
  q.placement.device = row.device;
  q.placement.count = row.num_devices.value_or(0);
  q.placement.system = row.setup;
  q.placement.framework = row_framework(row);
  return q;
}

namespace {

class RowEvaluator {
 public:
  explicit RowEvaluator(const ValidateOptions& o) : opts_(o), cache_(o) {}

  RowResult evaluate(const ReferenceRow& row) {
    RowResult res;
    res.row = row;
    try {
      compute(row, res);
      res.used = true;
    } catch (const Skip& s) {
      res.used = false;
      res.reason = s.reason;
      res.predicted.reset();
      res.error_pct.reset();
      res.match.reset();
    }
    return res;
  }

 private:
  const StepReport& predict_row(const ReferenceRow& row, Task task = Task::train) {
    PredictRequest q = request_for_row(row);
    q.task = task;
    q.engine = opts_.engine;
    if (!opts_.framework.empty()) q.placement.framework = opts_.framework;
    auto ov = opts_.overrides.find(row.device);
    if (ov != opts_.overrides.end()) q.placement.overrides = ov->second;
    for (const auto& kv : framework_overlay_for(opts_.framework_overrides, row, opts_.framework))
      q.placement.overrides.push_back(kv);
    return cache_.get(q);
  }

  std::string dataset_of(const ReferenceRow& row) {
    std::string name = row.dataset.empty() ? find_model(row.model).dataset : row.dataset;
    if (datasets_.empty()) datasets_ = load_datasets();
    if (!datasets_.count(name)) throw Skip{"unknown dataset '" + name + "'"};
    return name;
  }

  int64_t dataset_examples(const ReferenceRow& row) { return datasets_.at(dataset_of(row)).train_examples; }

  static double throughput(const StepReport& r) {
    if (!(r.throughput_samples_per_s > 0)) throw Skip{"engine predicted no throughput (" + r.engine + ")"};
    return r.throughput_samples_per_s;
  }

  const cost::PriceCatalog& prices() const { return opts_.prices ? *opts_.prices : cost::default_price_catalog(); }
  const cost::ConvergenceCatalog& curves() const {
    return opts_.curves ? *opts_.curves : cost::default_convergence_catalog();
  }

  // Runs a cost-model call; its UserError/UnavailableError skips the row with the message.
  template <class F>
  static auto cost_model(F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const UserError& e) {
      throw Skip{std::string("cost model: ") + e.what()};
    } catch (const UnavailableError& e) {
      throw Skip{std::string("cost model: ") + e.what()};
    }
  }

  double usd_per_hour(const ReferenceRow& row) {
    double v = cost_model([&] {
      const std::string offer = offer_for_row(row, prices());
      return prices().usd_per_h(offer, tier_for_offer(row, prices(), offer));
    });
    if (!(v > 0)) throw Skip{"cost model: no positive price for this placement"};
    return v;
  }

  // The row's time- or cost-to-target question in the cost model's terms.
  cost::CostQuery target_query(const ReferenceRow& row, const StepReport& rep, const Metric& m) {
    cost::CostQuery q;
    q.model = row.model;
    q.dataset = dataset_of(row);
    q.metric = is_top5(m.kind) ? "top5" : "top1";
    q.accuracy = *m.target;
    q.global_batch = rep.global_batch;
    q.precision = row.precision;
    q.throughput_samples_per_s = throughput(rep);
    q.startup_s = compile_time_s(rep);
    return q;
  }

  static double reached(double epochs) {
    if (!(epochs > 0)) throw Skip{"cost model: target accuracy not reached"};
    return epochs;
  }

  // The K80 baseline of *_relative_to_k80 rows: the same job on one K80 die.
  ReferenceRow baseline_row(const ReferenceRow& row) {
    ReferenceRow b = row;
    b.device = opts_.baseline_device;
    b.num_devices = 1;
    b.setup.clear();
    // The same stack on the GPU (a -pip/-compiled suffix names a CPU build, which the GPU
    // ignores: resolve_placement).
    if (!config_exists("devices", b.device)) throw Skip{"unknown baseline device '" + b.device + "'"};
    return b;
  }

  void compute(const ReferenceRow& row, RowResult& res) {
    auto metric = parse_metric(row.metric);
    if (!metric) throw Skip{"unknown metric '" + row.metric + "'"};
    if (!row.value) throw Skip{"value: missing"};
    const double ref = *row.value;
    if (metric->kind == MetricKind::oom) {
      if (ref != 0 && ref != 1) throw Skip{"oom: value must be 0 (fits) or 1 (out of memory)"};
    } else if (!(ref > 0)) {
      throw Skip{"value: must be > 0 for a relative error"};
    } else if (ref > 1e15) {
      // No metric comes near; such a value would only swamp the MAPE of its group.
      throw Skip{"value: implausibly large (> 1e15)"};
    }
    // A value in another unit would be compared as if it were in the metric's.
    if (!row.unit.empty()) {
      const auto& units = metric_units(metric->kind);
      if (std::find(units.begin(), units.end(), row.unit) == units.end()) {
        std::string list;
        for (const auto& u : units) list += (list.empty() ? "" : ", ") + u;
        throw Skip{"unit: '" + row.unit + "' is not a unit of " + row.metric + " (one of: " + list + ")"};
      }
    }
    check_identity(row);
    if (parallel::cluster_exists(row.setup)) {
      res.engine = "analytical";
      res.predicted = cluster_row(row, *metric);
      res.error_pct = error_pct(*res.predicted, ref);
      return;
    }

    // Inference rows are predicted as forward passes; every other metric follows a training step.
    const StepReport& rep = predict_row(row, metric->kind == MetricKind::infer_throughput ? Task::inference : Task::train);
    res.engine = rep.engine;
    double pred = 0;
    switch (metric->kind) {
      case MetricKind::train_throughput:
      case MetricKind::infer_throughput:
        pred = throughput(rep);
        if (row.unit == "tokens/s") {
          if (!(rep.throughput_tokens_per_s > 0)) throw Skip{"unit: tokens/s needs a token-wise sequence model"};
          pred = rep.throughput_tokens_per_s;
        }
        break;
      case MetricKind::step_time_s:
        pred = rep.step_time_s;
        break;
      case MetricKind::epoch_seconds_median_after_first:
        pred = cost::seconds_to_target(throughput(rep), 1, dataset_examples(row));
        break;
      case MetricKind::first_epoch_seconds:
        pred = cost::seconds_to_target(throughput(rep), 1, dataset_examples(row), compile_time_s(rep));
        break;
      case MetricKind::oom:
        pred = rep.fits_in_memory ? 0 : 1;
        break;
      case MetricKind::time_relative_to_k80:
      case MetricKind::cost_relative_to_k80: {
        ReferenceRow b = baseline_row(row);
        StepReport base = predict_row(b);  // copy: the cache may grow
        double thr = throughput(rep), thr_b = throughput(base);
        if (metric->kind == MetricKind::time_relative_to_k80) {
          pred = cost::time_relative(thr, thr_b);
        } else {
          double usd = usd_per_hour(row), usd_b = usd_per_hour(b);  // in this order: the row's price reason first
          pred = cost::cost_relative(thr, usd, thr_b, usd_b);
        }
        break;
      }
      case MetricKind::images_per_s_per_usd_per_h:
        pred = cost::images_per_s_per_usd_per_h(throughput(rep), usd_per_hour(row));
        break;
      case MetricKind::gpu_util_pct_smi:
      case MetricKind::gpu_mem_ctrl_util_pct:
      case MetricKind::gpu_mem_used_bytes:
      case MetricKind::gpu_power_w: {
        // The step's monitoring readings (predict/monitoring.hpp, predict/host_pass.cpp): only
        // GPUs on an engine that models the step report them.
        const std::optional<double> reading = rep.extra_number(row.metric);
        if (!reading)
          throw Skip{"metric: the " + rep.engine + " engine reports no " + row.metric + " for device '" + row.device +
                     "' (GPUs on the analytical engine do)"};
        pred = *reading;
        break;
      }
      case MetricKind::epochs_to_top1:
      case MetricKind::epochs_to_top5: {
        std::string dataset = dataset_of(row), kind = is_top5(metric->kind) ? "top5" : "top1";
        std::string src = cost::epochs_input_source(curves(), row.model, dataset, kind, *metric->target,
                                                    rep.global_batch, row.precision);
        if (!src.empty())
          throw Skip{"circular: at this global batch the epochs are an input, " + src + ", not a prediction"};
        pred = reached(cost_model([&] {
          return cost::epochs_to_target(curves(), row.model, dataset, kind, *metric->target, rep.global_batch,
                                        row.precision);
        }));
        break;
      }
      case MetricKind::cost_to_top1:
      case MetricKind::cost_to_top5:
      case MetricKind::hours_to_top1:
      case MetricKind::hours_to_top5:
      case MetricKind::minutes_to_top1:
      case MetricKind::minutes_to_top5: {
        cost::CostQuery q = target_query(row, rep, *metric);
        bool dollars = metric->kind == MetricKind::cost_to_top1 || metric->kind == MetricKind::cost_to_top5;
        if (dollars) {
          q.offer = cost_model([&] { return offer_for_row(row, prices()); });
          q.tier = tier_for_offer(row, prices(), q.offer);
        }
        cost::CostResult c = cost_model([&] { return cost::evaluate_cost(q, prices(), curves()); });
        reached(c.epochs);
        if (dollars && !(*c.usd_per_h > 0)) throw Skip{"cost model: no positive price for this placement"};
        if (dollars)
          pred = *c.usage_cost_usd;
        else if (metric->kind == MetricKind::hours_to_top1 || metric->kind == MetricKind::hours_to_top5)
          pred = c.hours;
        else
          pred = c.seconds / 60.0;
        break;
      }
    }
    res.predicted = pred;
    if (metric->kind == MetricKind::oom)
      res.match = (pred != 0) == (ref != 0);
    else
      res.error_pct = error_pct(pred, ref);
  }

  // A row whose setup is a cluster: the large-model planner (validation/cluster_rows.hpp).
  double cluster_row(const ReferenceRow& row, const Metric& m) {
    if (m.kind != MetricKind::train_throughput && m.kind != MetricKind::step_time_s)
      throw Skip{"metric: a cluster row predicts train_throughput or step_time_s"};
    auto ov = opts_.overrides.find(row.device);
    std::vector<std::string> overrides = ov != opts_.overrides.end() ? ov->second : std::vector<std::string>{};
    for (const auto& kv : framework_overlay_for(opts_.framework_overrides, row, opts_.framework)) overrides.push_back(kv);
    try {
      return predict_cluster_row(row, m.kind == MetricKind::step_time_s,
                                 opts_.framework.empty() ? row.framework : opts_.framework, overrides);
    } catch (const UserError& e) {
      throw Skip{e.what()};
    }
  }

  const ValidateOptions& opts_;
  PredictionCache cache_;
  std::map<std::string, DatasetSpec> datasets_;
};

std::vector<GroupError> group_errors(const std::vector<RowResult>& rows,
                                     const std::function<std::string(const RowResult&)>& key) {
  std::map<std::string, std::vector<double>> groups;
  for (const auto& r : rows)
    if (r.used && r.error_pct) groups[key(r)].push_back(*r.error_pct);
  std::vector<GroupError> out;
  for (const auto& [k, errs] : groups) {
    GroupError g;
    g.key = k;
    g.rows = static_cast<int>(errs.size());
    g.mape_pct = *mape_pct(errs);
    double s = 0;
    for (double e : errs) s += e;
    g.mean_error_pct = s / static_cast<double>(errs.size());
    out.push_back(g);
  }
  return out;
}

}  // namespace

void summarize(ValidationResult& r) {
  r.rows_used = r.rows_skipped = r.oom_matches = r.oom_total = 0;
  std::vector<double> errs;
  for (const auto& row : r.rows) {
    if (!row.used) {
      ++r.rows_skipped;
      continue;
    }
    ++r.rows_used;
    if (row.error_pct) errs.push_back(*row.error_pct);
    if (row.match) {
      ++r.oom_total;
      if (*row.match) ++r.oom_matches;
    }
  }
  r.mape_pct = mape_pct(errs);
  r.by_device = group_errors(r.rows, [](const RowResult& x) { return x.row.device; });
  r.by_model = group_errors(r.rows, [](const RowResult& x) { return x.row.model; });
  r.by_metric = group_errors(r.rows, [](const RowResult& x) { return x.row.metric; });
  r.by_framework = group_errors(r.rows, [](const RowResult& x) {
    return x.row.framework.empty() ? std::string(kUnspecifiedFramework) : x.row.framework;
  });
}

ValidationResult validate_rows(const std::vector<ReferenceRow>& rows, const ValidateOptions& opts,
                               const std::string& reference_name) {
  // Options applied to many rows: a typo skipped every row it touched ("no profile for",
  // "unknown baseline device") and still exited 0. Named as the option instead.
  if (!opts.framework.empty()) check_framework_name(opts.framework);
  for (const auto& row : rows) {
    auto m = parse_metric(row.metric);
    if (m && (m->kind == MetricKind::time_relative_to_k80 || m->kind == MetricKind::cost_relative_to_k80) &&
        !config_exists("devices", opts.baseline_device))
      throw FieldError("baseline_device", "unknown device '" + opts.baseline_device + "' (configs/devices/); " +
                                              row.metric + " rows are predicted against it");
  }
  // A sequence length on a model that is not a Transformer is a mistake in the file, not a
  // row to skip: name its line.
  std::map<std::string, bool> token_model;
  for (const auto& row : rows) {
    if (!row.seq_len || !config_exists("models", row.model)) continue;
    auto it = token_model.find(row.model);
    if (it == token_model.end()) it = token_model.emplace(row.model, is_token_model(find_model(row.model))).first;
    if (!it->second)
      throw UserError((reference_name.empty() ? std::string("reference") : reference_name) + ":" +
                      std::to_string(row.line) + ": seq_len: model '" + row.model +
                      "' is not a Transformer; a sequence length applies to Transformer rows only");
  }
  ValidationResult out;
  out.reference = reference_name;
  RowEvaluator ev(opts);
  ProgressBar bar("validate", static_cast<long long>(rows.size()), opts.progress);
  for (size_t i = 0; i < rows.size(); ++i) {
    out.rows.push_back(ev.evaluate(rows[i]));
    bar.update(static_cast<long long>(i + 1), rows[i].device + " " + rows[i].model);
  }
  bar.finish();
  summarize(out);
  return out;
}

}  // namespace xpusim::validation
