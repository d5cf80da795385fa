// Loads a sweep YAML and checks it completely before anything runs: every axis key is a field
// of the tables (field_tables.cpp; plan points: plan_point.cpp) or a device YAML key (`set.KEY`,
// checked by the device's own spec reader), every value parses, and every placement the axes
// can combine is a valid request.
#include "sweep/sweep_spec.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <climits>
#include <map>
#include <set>

#include "common/config_paths.hpp"
#include "common/error.hpp"
#include "common/output.hpp"
#include "common/spec_reader.hpp"
#include "common/suggest.hpp"
#include "costmodel/convergence.hpp"
#include "engine/platform_spec.hpp"
#include "models/dtype.hpp"
#include "models/zoo.hpp"
#include "sweep/plan_point.hpp"

namespace xpusim::sweep {

namespace fs = std::filesystem;

namespace {

bool present(const YAML::Node& n) { return n && n.IsDefined() && !n.IsNull(); }

}  // namespace

const char* sampling_name(Sampling s) {
  switch (s) {
    case Sampling::grid: return "grid";
    case Sampling::random: return "random";
    case Sampling::lhs: return "lhs";
  }
  return "?";
}

long long SweepSpec::grid_size() const {
  // Saturates instead of wrapping: load_sweep refuses anything past kMaxSweepPoints.
  long long n = 1;
  for (const auto& a : axes)
    if (__builtin_mul_overflow(n, static_cast<long long>(a.values.size()), &n)) return LLONG_MAX;
  return n;
}

namespace {

std::string field_keys(PointKind kind) {
  std::vector<std::string> k;
  for (const auto& f : axis_fields(kind)) k.push_back(f.key);
  return join_names(k);
}

std::string result_keys(PointKind kind) {
  std::vector<std::string> k;
  for (const auto& f : result_fields(kind)) k.push_back(f.key);
  return join_names(k);
}

bool is_field_key(const std::string& key, PointKind kind) {
  if (key.rfind(kSetPrefix, 0) == 0) return key.size() > std::string(kSetPrefix).size();
  for (const auto& f : axis_fields(kind))
    if (f.key == key) return true;
  return false;
}

// A scalar as the user wrote it (numbers keep their spelling: 1e3 stays 1e3).
std::string scalar_text(const std::string& file, const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) throw UserError(yaml_location(file, n) + ": " + key + ": expected a scalar value");
  return n.Scalar();
}

// `{from, to, count, scale}` -> count values; integers print without a decimal point.
std::vector<std::string> expand_range(const YAML::Node& n, const std::string& file, const std::string& key,
                                      PointKind kind) {
  bool integer = false;
  for (const auto& f : axis_fields(kind))
    if (f.key == key) integer = f.integer;
  SpecReader r(n, file, "axes." + key);
  double from = r.number("from", std::nullopt, "", "first value");
  double to = r.number("to", std::nullopt, "", "last value");
  // Bounded before any value is made: `count: 1e12` grew past 2 GB.
  long long count = r.integer("count", std::nullopt, "values", "number of values, ends included",
                              [](long long v) {
                                return v < 1 ? std::string("must be >= 1")
                                       : v > kMaxAxisValues
                                           ? std::to_string(v) + " values is more than " +
                                                 std::to_string(kMaxAxisValues) + " per axis"
                                           : std::string();
                              });
  std::string scale = r.text("scale", std::string("linear"), "spacing of the values", {"linear", "log"});
  r.finish();
  if (scale == "log" && (from <= 0 || to <= 0)) r.fail("scale", "log spacing needs from and to > 0");
  std::vector<std::string> out;
  for (long long i = 0; i < count; ++i) {
    double f = count == 1 ? 0.0 : double(i) / double(count - 1);
    double v = scale == "log" ? std::exp(std::log(from) + f * (std::log(to) - std::log(from))) : from + f * (to - from);
    double rounded = std::round(v);
    if (integer) {
      std::string t = std::to_string(static_cast<long long>(rounded));
      if (out.empty() || out.back() != t) out.push_back(t);  // log steps below 1 round to one value
      continue;
    }
    if (std::fabs(v - rounded) < 1e-9 * std::max(1.0, std::fabs(v)) && std::fabs(rounded) < 1e15)
      out.push_back(std::to_string(static_cast<long long>(rounded)));
    else
      out.push_back(fmt_g(v, 6));
  }
  return out;
}

SweepAxis read_axis(const std::string& key, const YAML::Node& val, const std::string& file, PointKind kind) {
  SweepAxis a;
  a.name = key;
  a.where = yaml_location(file, val);
  auto fail = [&](const std::string& msg) -> void { throw UserError(a.where + ": axes." + key + ": " + msg); };
  if (val.IsSequence()) {
    if (val.size() == 0) fail("empty axis (give at least one value)");
    if (static_cast<long long>(val.size()) > kMaxAxisValues)
      fail(std::to_string(val.size()) + " values is more than " + std::to_string(kMaxAxisValues) + " per axis");
    bool zipped = val[0].IsMap();
    if (!zipped && !is_field_key(key, kind))
      fail("unknown axis key '" + key + "' (request fields: " + field_keys(kind) +
           "; set.KEY for a key of the device YAML; a list of mappings for an axis that sets several fields)");
    for (const auto& v : val) {
      if (zipped != v.IsMap())
        throw UserError(yaml_location(file, v) + ": axes." + key + ": mix of mappings and scalars");
      std::vector<Assignment> as;
      if (zipped) {
        if (v.size() == 0) throw UserError(yaml_location(file, v) + ": axes." + key + ": empty mapping");
        for (const auto& kv : v) {
          std::string k = kv.first.as<std::string>();
          if (!is_field_key(k, kind))
            throw UserError(yaml_location(file, kv.first) + ": axes." + key + "." + k + ": unknown field '" + k +
                            "' (request fields: " + field_keys(kind) + "; set.KEY for a key of the device YAML)");
          as.emplace_back(k, scalar_text(file, kv.second, "axes." + key + "." + k));
        }
      } else {
        as.emplace_back(key, scalar_text(file, v, "axes." + key));
      }
      a.values.push_back(as);
    }
  } else if (val.IsMap()) {
    if (!is_field_key(key, kind))
      fail("unknown axis key '" + key + "' (request fields: " + field_keys(kind) + "; set.KEY for a key of the device YAML)");
    for (const auto& v : expand_range(val, file, key, kind)) a.values.push_back({{key, v}});
  } else {
    fail("expected a list of values or {from, to, count, scale}");
  }
  return a;
}

}  // namespace

PointRequest request_for(const SweepSpec& s, const std::vector<size_t>& choice) {
  PointRequest r;
  // Training to a target needs real input data (the cost model refuses synthetic); speed
  // alone is predict()'s default, synthetic. An explicit `data` field wins either way.
  r.predict.data = s.target ? DataSource::real : DataSource::synthetic;
  if (s.kind == PointKind::plan) {
    r.plan.gpus = 0;   // required on a GPU cluster; a TPU slice defaults to its chips (plan_llm)
    r.pricing.clear();  // the offer's first tier, as plan's --tier
  }
  for (const auto& [k, v] : s.fixed) apply_assignment(r, k, v, s.kind);
  for (size_t i = 0; i < s.axes.size(); ++i)
    for (const auto& [k, v] : s.axes[i].values[choice[i]]) apply_assignment(r, k, v, s.kind);
  if (s.kind == PointKind::plan) finish_plan_request(r);
  return r;
}

namespace {

bool touches(const SweepAxis& a, const std::set<std::string>& keys) {
  for (const auto& v : a.values)
    for (const auto& [k, x] : v)
      if (keys.count(k) || k.rfind(kSetPrefix, 0) == 0) return true;
  return false;
}

// The request-level check of one combination: what predict() and the price catalog would reject.
// Combinations already checked whole, keyed by every assignment but `batch`: the batch only
// enters the request checks through check_request_fields (its range), so a batch axis of N
// values costs N field checks, not N model and placement resolutions (~0.8 ms each).
using CheckedCache = std::set<std::string>;

std::string key_without_batch(const SweepSpec& s, const std::vector<size_t>& choice) {
  std::string key;
  auto add = [&](const std::vector<Assignment>& as) {
    for (const auto& [k, v] : as)
      if (k != "batch") key += k + "=" + v + "\n";
  };
  add(s.fixed);
  for (size_t i = 0; i < s.axes.size(); ++i) add(s.axes[i].values[choice[i]]);
  return key;
}

std::string check_combination(const SweepSpec& s, const std::vector<size_t>& choice,
                              const std::vector<std::string>& devices, CheckedCache* cache = nullptr) {
  PointRequest r;
  if (s.kind == PointKind::plan) {
    try {
      return plan_request_problem(request_for(s, choice));
    } catch (const FieldError& e) {
      return e.field() + ": " + e.message();
    } catch (const UserError& e) {
      return e.what();
    }
  }
  const std::string key = cache ? key_without_batch(s, choice) : std::string();
  if (cache && cache->count(key)) {
    try {
      r = request_for(s, choice);
      check_request_fields(r.predict);
      return "";
    } catch (const FieldError& e) {
      return e.field() + ": " + e.message();
    } catch (const UserError& e) {
      return e.what();
    }
  }
  try {
    r = request_for(s, choice);
    if (r.predict.placement.device.empty()) return "device: no device (set it in fixed: or as an axis)";
    if (r.predict.model.empty()) return "model: no model (set it in fixed: or as an axis)";
    check_request(r.predict);
    if (!r.predict.placement.system.empty()) find_system(r.predict.placement.system);
  } catch (const FieldError& e) {
    return e.field() + ": " + e.message();
  } catch (const UserError& e) {
    return e.what();
  }
  if (r.offer == cost::kCheapestOffer) {
    try {
      cheapest_point_offer(r);
    } catch (const FieldError& e) {
      return e.field() + ": " + e.message();
    }
  } else if (!r.offer_provider.empty() || !r.offer_region.empty()) {
    return std::string(r.offer_provider.empty() ? "offer_region" : "offer_provider") + ": only with offer: cheapest";
  } else if (!r.offer.empty())
    if (auto bad = cost::offer_problem(cost::default_price_catalog(), r.offer, r.pricing, r.predict.placement.device,
                                       devices))
      return bad->first + ": " + bad->second;
  if (cache) cache->insert(key);
  return "";
}

std::string describe(const SweepSpec& s, const std::vector<size_t>& choice, const std::vector<size_t>& involved) {
  std::string d;
  for (size_t i : involved)
    for (const auto& [k, v] : s.axes[i].values[choice[i]]) d += (d.empty() ? "" : ", ") + k + "=" + v;
  return d;
}

// Checks each value of each axis with the other axes at their first value, then every
// combination of the axes that shape a placement (device, system, count, offer, pricing,
// set.KEY), so that a TPU key paired with a GPU device is caught here and not at point 5000.
void check_axes(const SweepSpec& s) {
  std::vector<std::string> devices = cost::known_devices();
  std::vector<size_t> first(s.axes.size(), 0);
  if (s.axes.empty()) {
    std::string bad = check_combination(s, first, devices);
    if (!bad.empty()) throw UserError(s.file + ": fixed: " + bad);
  }
  CheckedCache cache;
  for (size_t a = 0; a < s.axes.size(); ++a)
    for (size_t v = 0; v < s.axes[a].values.size(); ++v) {
      std::vector<size_t> c = first;
      c[a] = v;
      std::string bad = check_combination(s, c, devices, &cache);
      if (bad.empty()) continue;
      // Blame the axis that sets the field the error names (a bad offer is the offer axis's
      // fault even when found while trying the first value of another axis).
      std::string field = bad.substr(0, bad.find(": "));
      auto sets = [&](size_t x) {
        for (const auto& val : s.axes[x].values)
          for (const auto& [k, unused] : val)
            if (k == field || (field == "set" && k.rfind(kSetPrefix, 0) == 0)) return true;
        return false;
      };
      size_t blame = a;
      if (!sets(a))
        for (size_t x = 0; x < s.axes.size(); ++x)
          if (sets(x)) {
            blame = x;
            break;
          }
      throw UserError(s.axes[blame].where + ": axes." + s.axes[blame].name + ": " + describe(s, c, {blame}) + ": " + bad);
    }
  const std::set<std::string> placement_keys =
      s.kind == PointKind::plan
          ? std::set<std::string>{"model", "cluster", "device", "gpus", "offer", "pricing", "global_batch"}
          : std::set<std::string>{"device", "system", "count", "offer", "pricing", "precision", "framework"};
  std::vector<size_t> involved;
  long long combos = 1;
  for (size_t a = 0; a < s.axes.size(); ++a)
    if (touches(s.axes[a], placement_keys)) {
      involved.push_back(a);
      combos *= static_cast<long long>(s.axes[a].values.size());
    }
  if (involved.size() < 2 || combos > 20000) return;  // single axes were checked above
  std::vector<size_t> c = first;
  for (long long n = 0; n < combos; ++n) {
    long long rest = n;
    for (size_t j = involved.size(); j-- > 0;) {
      size_t len = s.axes[involved[j]].values.size();
      c[involved[j]] = static_cast<size_t>(rest % static_cast<long long>(len));
      rest /= static_cast<long long>(len);
    }
    std::string bad = check_combination(s, c, devices);
    if (!bad.empty()) {
      const SweepAxis& last = s.axes[involved.back()];
      throw UserError(last.where + ": axes." + last.name + ": " + describe(s, c, involved) + ": " + bad +
                      " (put fields that must go together in one axis: a list of mappings)");
    }
  }
}

}  // namespace

SweepSpec load_sweep(const std::string& path) {
  YAML::Node root = load_config_yaml(path);
  SpecReader top(root, path);
  SweepSpec s;
  s.file = path;
  s.name = top.text("name", fs::path(path).stem().string(), "sweep name");
  s.description = top.text("description", std::string(), "what the sweep explores");
  top.text("note", std::string(), "free text");
  const std::string kind = top.text("evaluate", std::string("predict"),
                                    "what a point runs: predict (one training step of a placement) or plan (the "
                                    "large-model planner's best parallel configuration, as xpusim plan)",
                                    {"predict", "plan"});
  s.kind = kind == "plan" ? PointKind::plan : PointKind::predict;
  std::string sampling = top.text("sampling", std::string("grid"), "how points are drawn from the axes",
                                  {"grid", "random", "lhs"});
  s.sampling = sampling == "grid" ? Sampling::grid : sampling == "random" ? Sampling::random : Sampling::lhs;
  s.samples = top.integer("samples", 0LL, "points", "random and lhs: number of points drawn",
                          [](long long v) { return v >= 0 ? "" : "must be >= 0"; });
  s.seed = static_cast<uint64_t>(top.integer("seed", 1LL, "", "random and lhs: seed of the generator",
                                             [](long long v) { return v >= 0 ? "" : "must be >= 0"; }));
  YAML::Node fixed = top.child("fixed", "request fields set on every point (field: value)");
  YAML::Node axes = top.child("axes", "field: [values] | field: {from, to, count, scale} | name: [{field: value, ...}]", true);
  YAML::Node target = top.child("target", "{dataset, accuracy | epochs, metric}: for hours, USD and kWh to a target");
  YAML::Node constraints = top.child("constraints", "{fits_in_memory, max: {field: limit}, min: {field: limit}}");
  YAML::Node objectives = top.child("objectives", "result fields of the Pareto front: [field] or {field: min|max}");
  top.finish();
  if (s.sampling != Sampling::grid && s.samples == 0) top.fail("samples", "random and lhs sampling need samples > 0");
  if (s.sampling == Sampling::grid && s.samples != 0) top.fail("samples", "grid sampling takes every point; drop samples");

  if (present(fixed)) {
    if (!fixed.IsMap()) top.fail("fixed", "expected a mapping field: value");
    for (const auto& kv : fixed) {
      std::string k = kv.first.as<std::string>();
      if (!is_field_key(k, s.kind))
        throw UserError(yaml_location(path, kv.first) + ": fixed." + k + ": unknown field '" + k +
                        "' (request fields: " + field_keys(s.kind) + "; set.KEY for a key of the device YAML)");
      s.fixed.emplace_back(k, scalar_text(path, kv.second, "fixed." + k));
    }
  }
  if (!axes.IsMap()) top.fail("axes", "expected a mapping of axes");
  for (const auto& kv : axes) s.axes.push_back(read_axis(kv.first.as<std::string>(), kv.second, path, s.kind));
  // A field set twice (in fixed: and by an axis, or by two axes) kept only the last value
  // silently: the row's column showed one value, the point used another.
  {
    std::map<std::string, std::string> set_by;  // field -> where it is set
    for (const auto& [k, v] : s.fixed) set_by.emplace(k, "fixed." + k);
    for (const auto& a : s.axes) {
      std::set<std::string> mine;
      for (const auto& val : a.values)
        for (const auto& [k, v] : val) mine.insert(k);
      for (const auto& k : mine) {
        auto [it, fresh] = set_by.emplace(k, "axes." + a.name);
        if (!fresh)
          throw UserError(a.where + ": axes." + a.name + ": sets " + k + ", which " + it->second +
                          " already sets; give each field in one place");
      }
    }
  }
  // The point count, computed before any point exists (make_points allocates them).
  if (s.sampling == Sampling::grid) {
    long long n = 1;
    bool over = false;
    for (const auto& a : s.axes) over = over || __builtin_mul_overflow(n, static_cast<long long>(a.values.size()), &n);
    if (over || n > kMaxSweepPoints)
      top.fail("axes", (over ? std::string("more than 2^63") : std::to_string(n)) + " grid points is more than " +
                           std::to_string(kMaxSweepPoints) + "; sample it (sampling: random or lhs) or shorten the axes");
  } else if (s.samples > kMaxSweepPoints) {
    top.fail("samples", std::to_string(s.samples) + " points is more than " + std::to_string(kMaxSweepPoints));
  }

  // Columns: each field once, in order of first appearance.
  std::set<std::string> seen;
  auto add_col = [&](const std::string& k) {
    if (seen.insert(k).second) s.columns.push_back(k);
  };
  for (const auto& [k, v] : s.fixed) add_col(k);
  for (const auto& a : s.axes)
    for (const auto& val : a.values)
      for (const auto& [k, v] : val) add_col(k);

  if (present(target) && s.kind == PointKind::plan)
    top.fail("target", "plan points train a number of tokens: give it as the tokens field (default: 20 per parameter)");
  if (present(target)) {
    SpecReader r(target, path, "target");
    cost::StudyTarget t;
    t.where = yaml_location(path, target);
    t.dataset = r.text("dataset", std::nullopt, "dataset in configs/datasets.yaml");
    try {
      find_dataset(t.dataset);
    } catch (const FieldError& e) {
      r.fail("dataset", e.message());
    }
    t.metric = r.text("metric", std::string("top1"), "accuracy metric", {"top1", "top5"});
    t.accuracy = r.number("accuracy", 0.0, "fraction", "target accuracy (0..1); absent = a fixed number of epochs",
                          [](double v) { return v >= 0 && v <= 1 ? "" : "is a fraction in [0, 1]"; });
    // 1e300 epochs gave hours and dollars of 1e300 and beyond (inf in sums).
    t.epochs = r.number("epochs", 0.0, "epochs", "fixed training budget when no accuracy is given",
                        [](double v) { return v >= 0 && v <= 1e6 ? "" : "must be in [0, 1e6]"; });
    r.finish();
    if ((t.accuracy > 0) == (t.epochs > 0)) r.fail("accuracy", "give exactly one of accuracy or epochs");
    if (t.accuracy > 0) {
      std::set<std::string> models;
      for (const auto& [k, v] : s.fixed)
        if (k == "model") models.insert(v);
      for (const auto& a : s.axes)
        for (const auto& val : a.values)
          for (const auto& [k, v] : val)
            if (k == "model") models.insert(v);
      for (const auto& m : models) {
        std::string name = m;
        try {
          name = find_model(m).name;
        } catch (const UserError&) {
          continue;  // reported with its axis below
        }
        if (cost::default_convergence_catalog().matching(name, t.dataset, t.metric).empty())
          r.fail("accuracy", "no convergence data for " + name + " on " + t.dataset + " (" + t.metric +
                                 "); give epochs instead, or add a curve under configs/convergence/");
      }
    }
    s.target = t;
  }

  if (present(constraints)) {
    SpecReader r(constraints, path, "constraints");
    s.require_fit = r.flag("fits_in_memory", true, "points that do not fit in device memory are infeasible");
    for (const char* side : {"max", "min"}) {
      YAML::Node m = r.child(side, std::string("{field: limit}: a result must be ") + (side[1] == 'a' ? "<=" : ">=") +
                                       " the limit");
      if (!present(m)) continue;
      if (!m.IsMap()) r.fail(side, "expected a mapping field: limit");
      for (const auto& kv : m) {
        std::string k = kv.first.as<std::string>();
        std::string where = yaml_location(path, kv.first);
        if (!find_result_field(k, s.kind))
          throw UserError(where + ": constraints." + side + "." + k + ": unknown result field '" + k +
                          "' (known: " + result_keys(s.kind) + ")");
        Bound b;
        b.field = k;
        b.is_max = side[1] == 'a';
        b.where = where;
        try {
          b.limit = kv.second.as<double>();
        } catch (const YAML::Exception&) {
          throw UserError(where + ": constraints." + side + "." + k + ": expected a number");
        }
        // .nan compared false with every result, so the constraint was silently ignored.
        if (!std::isfinite(b.limit))
          throw UserError(where + ": constraints." + side + "." + k + ": expected a finite number, not " +
                          kv.second.Scalar());
        s.bounds.push_back(b);
      }
    }
    r.finish();
  }

  if (present(objectives)) {
    auto add = [&](const std::string& k, const YAML::Node& at, std::optional<std::string> dir) {
      const ResultField* f = find_result_field(k, s.kind);
      if (!f)
        throw UserError(yaml_location(path, at) + ": objectives." + k + ": unknown result field '" + k +
                        "' (known: " + result_keys(s.kind) + ")");
      if (dir && *dir != "min" && *dir != "max")
        throw UserError(yaml_location(path, at) + ": objectives." + k + ": '" + *dir + "' is not min or max");
      for (const auto& o : s.objectives)
        if (o.field == k) throw UserError(yaml_location(path, at) + ": objectives." + k + ": listed twice");
      s.objectives.push_back({k, dir ? *dir == "max" : f->maximize});
    };
    if (objectives.IsSequence()) {
      for (const auto& o : objectives) add(scalar_text(path, o, "objectives"), o, std::nullopt);
    } else if (objectives.IsMap()) {
      for (const auto& kv : objectives) add(kv.first.as<std::string>(), kv.first, scalar_text(path, kv.second, "objectives"));
    } else {
      top.fail("objectives", "expected a list of result fields or a mapping field: min|max");
    }
  }
  if (s.objectives.empty())
    s.objectives = {{s.kind == PointKind::plan ? "throughput_tokens_per_s" : "throughput_samples_per_s", true}};
  if (!s.target)
    for (const auto& o : s.objectives)
      if (o.field == "epochs_to_target" || o.field == "hours_to_target" || o.field == "cost_to_target_usd" ||
          o.field == "energy_kwh")
        top.fail("objectives", o.field + " needs a target: (dataset and accuracy or epochs)");

  check_axes(s);
  return s;
}

}  // namespace xpusim::sweep
