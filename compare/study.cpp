// Loads a study YAML: targets, options (with `defaults:` merged in) and `sweep:` grids, and
// checks every name it uses against the catalogs so errors carry file:line.
#include "compare/study.hpp"

#include <cmath>

#include <algorithm>
#include <filesystem>
#include <set>

#include "common/error.hpp"
#include "common/output.hpp"
#include "common/spec_reader.hpp"
#include "common/suggest.hpp"
#include "costmodel/convergence.hpp"
#include "costmodel/offer_choice.hpp"
#include "engine/framework_spec.hpp"
#include "engine/platform_spec.hpp"
#include "models/dtype.hpp"
#include "models/zoo.hpp"
#include "predict/predict.hpp"

namespace xpusim::cost {

// A child() result that is really there (yaml-cpp's null node converts to true).
inline bool present(const YAML::Node& n) { return n && n.IsDefined() && !n.IsNull(); }

namespace fs = std::filesystem;

namespace {

std::string where(const std::string& file, const YAML::Node& n) { return yaml_location(file, n); }

StudyTarget read_target(const YAML::Node& n, const std::string& file, size_t index) {
  SpecReader r(n, file, "targets");
  StudyTarget t;
  t.where = where(file, n);
  t.model = r.text("model", std::nullopt, "zoo model, model YAML or ONNX file");
  try {
    ModelSpec spec = find_model(t.model);
    if (!is_onnx_path(t.model)) t.model = spec.name;  // an ONNX file stays a path: its stem may be a zoo name
  } catch (const FieldError& e) {
    r.fail("model", e.message());  // the finder names its field; here the study's key says where
  }
  t.dataset = r.text("dataset", std::nullopt, "dataset in configs/datasets.yaml");
  try {
    find_dataset(t.dataset);
  } catch (const FieldError& e) {  // datasets.yaml itself being bad is a plain UserError
    r.fail("dataset", e.message());
  }
  t.metric = r.text("metric", std::string("top1"), "accuracy metric", {"top1", "top5"});
  t.accuracy = r.number("accuracy", 0.0, "fraction", "target accuracy (0..1); absent = train a fixed number of epochs",
                        [](double v) { return v >= 0 && v <= 1 ? "" : "is a fraction in (0, 1] (0.757 for 75.7%)"; });
  t.epochs = r.number("epochs", 0.0, "epochs", "fixed training budget when no accuracy is given",
                      [](double v) { return v >= 0 ? "" : "must be >= 0"; });
  t.batch_per_device = r.integer("batch_per_device", 0, "samples", "default batch per device for options that set none",
                                 [](long long v) { return v >= 0 ? "" : "must be >= 0"; });
  std::string def_label = t.model + (t.accuracy > 0 ? "@" + t.metric + "_" + fmt_short(t.accuracy) : "@" + fmt_short(t.epochs) + "ep");
  t.label = r.text("label", def_label, "name in the output");
  r.finish();
  if ((t.accuracy > 0) == (t.epochs > 0)) r.fail("accuracy", "give exactly one of accuracy or epochs");
  if (t.accuracy > 0) {
    const ConvergenceCatalog& cc = default_convergence_catalog();
    auto curves = cc.matching(t.model, t.dataset, t.metric);
    if (curves.empty())
      r.fail("accuracy", "no convergence data for " + t.model + " on " + t.dataset + " (" + t.metric +
                             "); known curves: " + cc.names());
    // Unreachable by every curve is a study error; unreachable by one option's curve is a row note.
    bool reached = false;
    const ConvergenceCurve* best = nullptr;
    for (const auto* c : curves) {
      reached = reached || epochs_on_curve(*c, t.accuracy).has_value();
      if (!best || c->best_accuracy() > best->best_accuracy()) best = c;
    }
    if (!reached)
      r.fail("accuracy", "target " + fmt_short(t.accuracy) + " is never reached by the convergence data for " + t.model +
                             " on " + t.dataset + "; the best accuracy known is " + fmt_short(best->best_accuracy()) +
                             " (curve " + best->name + ", epoch " + fmt_short(best->best_epoch()) + ")");
  }
  (void)index;
  return t;
}

struct OptionReader {
  const std::string& file;
  const PriceCatalog& prices;
  const std::vector<std::string>& devices;
  const std::vector<StudyTarget>& targets;

  StudyOption read(YAML::Node n, const YAML::Node& defaults, const std::string& ctx) {
    if (!n.IsMap()) throw UserError(where(file, n) + ": " + ctx + ": expected a mapping");
    // Defaults fill the keys an option leaves out; the nodes keep their own line numbers.
    if (present(defaults) && defaults.IsMap())
      for (const auto& kv : defaults) {
        std::string k = kv.first.as<std::string>();
        if (!n[k]) n[k] = kv.second;
      }
    SpecReader r(n, file, ctx);
    StudyOption o;
    o.where = where(file, n);
    o.label = r.text("label", std::nullopt, "name of the option in the output");
    Placement& pl = o.placement;
    pl.device = r.text("device", std::nullopt, "device name (configs/devices/ or a system's devices)");
    if (std::find(devices.begin(), devices.end(), pl.device) == devices.end() && !fs::exists(pl.device))
      r.fail("device", "unknown device '" + pl.device + "' (known: " + join_names(devices) + ")");
    pl.count = int(r.integer("count", 1, "devices", "GPUs, TPU cores or vCPUs",
                            [](long long v) { return v > 0 ? "" : "must be > 0"; }));
    pl.system = r.text("system", std::string(), "system (configs/systems/); default: the device's");
    if (!pl.system.empty()) {
      SystemSpec s;
      try {
        s = find_system(pl.system);
      } catch (const FieldError& e) {
        r.fail("system", e.message());
      }
      if (std::find(s.devices.begin(), s.devices.end(), pl.device) == s.devices.end())
        r.fail("system", "system '" + pl.system + "' holds " + join_names(s.devices) + ", not " + pl.device);
    }
    // Every text field becomes its type here, so nothing downstream re-parses (or drops) it.
    std::string build = r.text("build", std::string(), "CPU devices: pip or compiled");
    if (!build.empty()) {
      CpuBuild b;
      if (!parse_cpu_build(build, b)) r.fail("build", "unknown build '" + build + "' (pip or compiled)");
      pl.build = b;
    }
    pl.framework = r.text("framework", std::string(), "framework profile (configs/frameworks/) or a name it lists");
    // A name no profile answers to is the file's error, as an unknown device is, not a failure
    // of every row that uses it. Which engine's profile applies is settled per row.
    if (!pl.framework.empty()) {
      try {
        check_framework_name(pl.framework);
      } catch (const FieldError& e) {
        r.fail("framework", e.message());
      }
    }
    std::string precision = r.text("precision", std::string("fp32"), precision_choices());
    if (!parse_precision(precision, o.precision))
      r.fail("precision", "unknown precision '" + precision + "' (" + precision_choices() + ")");
    o.task = task_from_name(r.text("task", std::string("train"), "train or inference (throughput of forward passes)",
                                   {"train", "inference"}));
    o.batch_per_device = r.integer("batch", 0, "samples", "batch per device (default: the target's batch_per_device)",
                                   [](long long v) { return v >= 0 ? "" : "must be > 0"; });
    parse_data_source(r.text("data", std::string("real"), "input data", {"synthetic", "real"}), o.data);
    o.offer = r.text("offer", std::nullopt, "price offer id (configs/pricing/: catalog/name), or cheapest");
    std::string tier = r.text("pricing", std::string("on_demand"), tier_choices());
    const std::string provider = r.text("offer_provider", std::string(), "offer: cheapest: only this provider's offers");
    const std::string region = r.text("offer_region", std::string(), "offer: cheapest: only offers in this region");
    if (o.offer == kCheapestOffer) {
      if (!parse_tier(tier, o.tier)) r.fail("pricing", "'" + tier + "' is not one of " + std::string(tier_choices()));
      OfferNeed need;
      need.device = pl.device;
      need.count = pl.count;
      need.system = pl.system;
      if (!pl.system.empty()) need.node_devices = find_system(pl.system).devices_per_host;
      need.tier = o.tier;
      need.provider = provider;
      need.region = region;
      try {
        const OfferChoice ch = cheapest_offer(prices, need);
        o.offer = ch.id;
        o.offer_instances = ch.instances;
        o.offer_choice = ch.summary;
      } catch (const FieldError& e) {
        r.fail("offer", e.message());
      }
    } else {
      if (!provider.empty() || !region.empty())
        r.fail(provider.empty() ? "offer_region" : "offer_provider", "only with offer: cheapest (a named offer has its own)");
      if (auto bad = offer_problem(prices, o.offer, tier, pl.device, devices)) r.fail(bad->first, bad->second);
      parse_tier(tier, o.tier);
    }

    YAML::Node tp = r.child("throughput", "samples/s for the whole job, or predict | measured", true);
    if (!tp.IsScalar()) r.fail("throughput", "expected a number, predict or measured");
    if (tp.Scalar() == "predict") o.source = ThroughputSource::predict;
    else if (tp.Scalar() == "measured") o.source = ThroughputSource::measured;
    else {
      try {
        o.given_throughput = tp.as<double>();
      } catch (const YAML::Exception&) {
        r.fail("throughput", "expected a number (samples/s), predict or measured, got '" + tp.Scalar() + "'");
      }
      if (!(o.given_throughput > 0 && std::isfinite(o.given_throughput)))
        r.fail("throughput", "must be a finite number > 0 samples/s");
      o.source = ThroughputSource::given;
    }
    o.throughput_source_note = r.text("throughput_source", std::string(), "where a given throughput comes from");
    if (o.source == ThroughputSource::given && o.throughput_source_note.empty())
      r.fail("throughput_source", "a given throughput needs its source");
    YAML::Node set = r.child("set", "device YAML overrides: list of KEY=VALUE or a mapping");
    if (present(set)) {
      if (set.IsSequence())
        for (const auto& s : set) {
          if (!s.IsScalar()) r.fail("set", "expected a list of KEY=VALUE or a mapping");
          pl.overrides.push_back(s.Scalar());
        }
      else if (set.IsMap())
        for (const auto& kv : set) {
          if (!kv.second.IsScalar()) r.fail("set", kv.first.Scalar() + ": expected a single value");
          pl.overrides.push_back(kv.first.Scalar() + "=" + kv.second.Scalar());
        }
      else
        r.fail("set", "expected a list of KEY=VALUE or a mapping");
      for (const auto& s : pl.overrides)
        if (s.find('=') == std::string::npos || s[0] == '=') r.fail("set", "'" + s + "' is not KEY=VALUE");
    }
    o.convergence = r.text("convergence", std::string(), "convergence curve name (default: best match per target)");
    o.startup_given = r.has("startup_s");
    o.startup_s = r.number("startup_s", 0.0, "s", "one-off start-up / compile time",
                           [](double v) { return v >= 0 ? "" : "must be >= 0"; });
    o.eval_s_per_epoch = r.number("eval_s_per_epoch", 0.0, "s", "evaluation time per epoch",
                                  [](double v) { return v >= 0 ? "" : "must be >= 0"; });
    if (r.has("power_w"))
      o.power_w = r.number("power_w", std::nullopt, "W", "power while training (default: the modelled power, else the offer's)",
                           [](double v) { return v >= 0 ? "" : "must be >= 0"; });
    else
      r.number("power_w", 0.0, "W", "power while training (default: the modelled power, else the offer's)");
    r.finish();

    std::set<std::string> models;
    for (const auto& t : targets) {
      models.insert(t.model);
      // An accuracy is reached by training; an inference option prices passes over the
      // dataset (`epochs` = how many times every training example is scored).
      if (o.task == Task::inference && t.accuracy > 0)
        r.fail("task", "inference reaches no accuracy: target " + t.label +
                           " gives one; inference options take targets with epochs (passes over the dataset)");
      if (o.batch_per_device == 0 && t.batch_per_device == 0)
        r.fail("batch", "required: neither the option nor target " + t.label + " gives a batch");
      if (!o.convergence.empty() && t.accuracy > 0) {
        const ConvergenceCurve* c = default_convergence_catalog().find(o.convergence);
        if (!c) r.fail("convergence", "unknown curve '" + o.convergence + "' (known: " + default_convergence_catalog().names() + ")");
        if (c->model != t.model || c->dataset != t.dataset || c->metric != t.metric)
          r.fail("convergence", "curve '" + c->name + "' is for " + c->model + "/" + c->dataset + "/" + c->metric +
                                    ", target " + t.label + " is " + t.model + "/" + t.dataset + "/" + t.metric);
      }
    }
    if (o.source == ThroughputSource::given && models.size() > 1)
      r.fail("throughput", "a given throughput belongs to one model, but the targets train " + join_names({models.begin(), models.end()}));
    return o;
  }
};

void expand_sweep(const YAML::Node& sw, const YAML::Node& defaults, OptionReader& rd, const std::string& file,
                  std::vector<StudyOption>& out) {
  if (!sw.IsSequence()) throw UserError(where(file, sw) + ": sweep: expected a list of {option, batch, set}");
  for (const auto& e : sw) {
    SpecReader r(e, file, "sweep");
    YAML::Node tmpl = r.child("option", "the option to vary (same keys as options)", true);
    std::vector<long long> batches = r.integers("batch", std::vector<long long>{}, "samples", "batch sizes per device");
    YAML::Node set = r.child("set", "mapping KEY: [values] of device overrides; the grid is their product");
    r.finish();
    // The swept batch stands in for the template's own (which may be left out).
    if (!batches.empty() && tmpl.IsMap() && !present(tmpl["batch"])) tmpl["batch"] = batches.front();
    StudyOption base = rd.read(tmpl, defaults, "sweep.option");
    for (auto b : batches)
      if (b <= 0) r.fail("batch", "must be > 0");
    // Grid: batch x every override key, in file order.
    std::vector<std::pair<std::string, std::vector<std::string>>> axes;
    if (present(set)) {
      if (!set.IsMap()) r.fail("set", "expected a mapping KEY: [values]");
      for (const auto& kv : set) {
        std::vector<std::string> vals;
        if (kv.second.IsSequence()) {
          for (const auto& v : kv.second) {
            if (!v.IsScalar()) r.fail("set", kv.first.Scalar() + ": expected a list of values");
            vals.push_back(v.Scalar());
          }
        } else if (kv.second.IsScalar()) {
          vals.push_back(kv.second.Scalar());
        } else {
          r.fail("set", kv.first.Scalar() + ": expected a value or a list of values");
        }
        axes.emplace_back(kv.first.as<std::string>(), vals);
      }
      if (base.source == ThroughputSource::given)
        r.fail("set", "overrides change nothing for a given throughput; use throughput: predict");
    }
    // Labels name the global batch and the replicas it is split over ("global_batch=128(8x16)"):
    // a per-device batch alone reads as the job's (colab_tpu/batch=16 is 128 over 8 cores).
    int replicas = base.placement.count;
    try {
      replicas = resolve_placement(base.placement, cached_engine(engine_for_device(base.placement.device))).replicas;
    } catch (const std::exception&) {
      // an engine that is not here (a module not built): the requested devices
    }
    std::vector<StudyOption> grid{base};
    if (!batches.empty()) {
      std::vector<StudyOption> next;
      for (const auto& g : grid)
        for (auto b : batches) {
          StudyOption o = g;
          o.batch_per_device = b;
          o.label += "/global_batch=" + std::to_string(b * replicas) + "(" + std::to_string(replicas) + "x" +
                     std::to_string(b) + ")";
          next.push_back(o);
        }
      grid = next;
    }
    for (const auto& [key, vals] : axes) {
      std::vector<StudyOption> next;
      for (const auto& g : grid)
        for (const auto& v : vals) {
          StudyOption o = g;
          o.placement.overrides.push_back(key + "=" + v);
          o.label += "/" + key + "=" + v;
          next.push_back(o);
        }
      grid = next;
    }
    out.insert(out.end(), grid.begin(), grid.end());
  }
}

}  // namespace

Study load_study(const std::string& path, const PriceCatalog* catalog, const std::vector<std::string>* known) {
  const PriceCatalog& prices = catalog ? *catalog : default_price_catalog();
  YAML::Node root = load_config_yaml(path);
  SpecReader top(root, path);
  Study s;
  s.file = path;
  s.name = top.text("name", fs::path(path).stem().string(), "study name");
  s.description = top.text("description", std::string(), "what the study compares");
  s.source = top.text("source", std::string(), "the study it redoes, if any");
  top.text("note", std::string(), "free text");
  YAML::Node targets = top.child("targets", "list of {model, dataset, accuracy | epochs}", true);
  YAML::Node defaults = top.child("defaults", "keys merged into every option that does not set them");
  YAML::Node options = top.child("options", "list of options");
  YAML::Node sweep = top.child("sweep", "list of {option, batch: [...], set: {KEY: [...]}} grids");
  s.breakeven_against = top.text("breakeven_against", std::string(), "option label owned hardware is compared with");
  const std::string billing =
      top.text("billing", std::string("offer"),
               "offer: bill each run by its offer's rule (granularity, minimum); prorated: hours x $/h, as the "
               "source reports cost",
               {"offer", "prorated"});
  top.finish();
  if (!targets.IsSequence() || targets.size() == 0) top.fail("targets", "expected a non-empty list");
  for (size_t i = 0; i < targets.size(); ++i) s.targets.push_back(read_target(targets[i], path, i));
  if (present(defaults) && !defaults.IsMap()) top.fail("defaults", "expected a mapping of option keys");
  std::vector<std::string> listed;
  if (!known) listed = known_devices();
  const std::vector<std::string>& devices = known ? *known : listed;
  OptionReader rd{path, prices, devices, s.targets};
  if (present(options)) {
    if (!options.IsSequence()) top.fail("options", "expected a list");
    for (auto o : options) s.options.push_back(rd.read(o, defaults, "options"));
  }
  if (present(sweep)) expand_sweep(sweep, defaults, rd, path, s.options);
  if (s.options.empty()) top.fail("options", "the study has no options (give options or sweep)");
  for (auto& o : s.options) o.billing_prorated = billing == "prorated";
  std::set<std::string> labels;
  for (const auto& o : s.options)
    if (!labels.insert(o.label).second) throw UserError(o.where + ": label: duplicate option label '" + o.label + "'");
  if (!s.breakeven_against.empty() && !labels.count(s.breakeven_against))
    top.fail("breakeven_against", "no option labelled '" + s.breakeven_against + "'");
  return s;
}

}  // namespace xpusim::cost
