#include "predict/predict.hpp"
#include "models/zoo_seq_len.hpp"

#include <cmath>
#include <map>
#include <memory>
#include <mutex>

#include "common/config_paths.hpp"
#include "common/error.hpp"
#include "common/spec_reader.hpp"
#include "common/suggest.hpp"
#include "predict/host_pass.hpp"
#include "predict/monitoring.hpp"

namespace xpusim {

namespace {

// Parsed specs shared by every request of the process: one parse per (file, overrides).
struct SpecCache {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const DeviceConfig>> devices;
  std::map<std::string, std::shared_ptr<const SystemSpec>> systems;
  std::map<std::string, std::shared_ptr<const DatasetSpec>> datasets;
  std::map<std::string, std::shared_ptr<const FrameworkSpec>> frameworks;
};

SpecCache& spec_cache() {
  static SpecCache c;
  return c;
}

std::shared_ptr<const DeviceConfig> cached_device(const Engine& engine, const std::string& path,
                                                  const std::vector<std::string>& overrides) {
  std::string key = engine.name() + "|" + path;
  for (const auto& o : overrides) key += "|" + o;
  SpecCache& c = spec_cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.devices.find(key);
    if (it != c.devices.end()) return it->second;
  }
  auto d = engine.load_device(path, overrides);
  std::lock_guard<std::mutex> lock(c.mu);
  return c.devices.emplace(key, d).first->second;
}

std::shared_ptr<const SystemSpec> cached_system(const std::string& name_or_path,
                                                const std::vector<std::string>& overrides) {
  const std::string path = find_config_file("systems", name_or_path, "system", "system");
  std::string key = path;
  for (const auto& o : overrides) key += "|" + o;
  SpecCache& c = spec_cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.systems.find(key);
    if (it != c.systems.end()) return it->second;
  }
  auto s = std::make_shared<const SystemSpec>(load_system_spec(path, overrides));
  std::lock_guard<std::mutex> lock(c.mu);
  return c.systems.emplace(key, s).first->second;
}

std::shared_ptr<const DatasetSpec> cached_dataset(const std::string& name) {
  SpecCache& c = spec_cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.datasets.find(name);
    if (it != c.datasets.end()) return it->second;
  }
  auto d = std::make_shared<const DatasetSpec>(find_dataset(name, "data"));
  std::lock_guard<std::mutex> lock(c.mu);
  return c.datasets.emplace(name, d).first->second;
}

constexpr const char* kFrameworkPrefix = "framework.";
// "system.KEY=VALUE" sets a field of the placement's system (`xpusim calibrate --system`).
constexpr const char* kSystemPrefix = "system.";

std::shared_ptr<const FrameworkSpec> cached_framework(const std::string& name, const std::string& engine,
                                                      const std::vector<std::string>& overrides) {
  std::string key = engine + "|" + name;
  for (const auto& o : overrides) key += "|" + o;
  SpecCache& c = spec_cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.frameworks.find(key);
    if (it != c.frameworks.end()) return it->second;
  }
  // Without overrides the name index's parse is the profile; with them the file is parsed
  // again with the overrides applied (they are validated like the file's own fields).
  std::shared_ptr<const FrameworkSpec> f;
  if (overrides.empty()) {
    f = find_framework_profile(name, engine);
    if (!f) f = std::make_shared<const FrameworkSpec>();
  } else {
    const std::string file = find_framework_file(name, engine);
    if (file.empty()) throw FieldError("set", "framework.* overrides need a framework profile");
    f = std::make_shared<const FrameworkSpec>(load_framework_spec(file, overrides));
  }
  std::lock_guard<std::mutex> lock(c.mu);
  return c.frameworks.emplace(key, f).first->second;
}

// Gradient accumulation: the micro-batches per optimizer step a global batch asks for.
int micro_batches_of(const PredictRequest& r, const Engine& engine, const OpGraph& g, int replicas) {
  if (r.global_batch == 0) return 1;
  const int64_t per_step = g.batch * replicas;
  if (r.global_batch < 0 || r.global_batch % per_step != 0)
    throw FieldError("global_batch", "must be a positive multiple of the batch per device x data-parallel replicas (" +
                                         std::to_string(g.batch) + " x " + std::to_string(replicas) + " = " +
                                         std::to_string(per_step) + "), got " + std::to_string(r.global_batch));
  const int64_t k = r.global_batch / per_step;
  if (k > 1 && g.task == Task::inference)
    throw FieldError("global_batch", "an inference pass has no optimizer step to accumulate gradients for");
  if (k > 1 && !engine.models_gradient_accumulation())
    throw FieldError("global_batch", "gradient accumulation (" + std::to_string(k) + " micro-batches per step) is "
                                     "modelled by the analytical engine only, not by " + engine.name());
  if (k > 1000000) throw FieldError("global_batch", "more than 1,000,000 micro-batches per step");
  return static_cast<int>(k);
}

}  // namespace

Engine& cached_engine(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Engine>> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, make_engine(name)).first;
  return *it->second;
}

PlacementOverrides split_placement_overrides(const std::vector<std::string>& overrides) {
  PlacementOverrides out;
  for (const auto& o : overrides) {
    if (o.rfind(kFrameworkPrefix, 0) == 0)
      out.framework.push_back(o.substr(std::string(kFrameworkPrefix).size()));
    else if (o.rfind(kSystemPrefix, 0) == 0)
      out.system.push_back(o.substr(std::string(kSystemPrefix).size()));
    else
      out.device.push_back(o);
  }
  return out;
}

ResolvedPlacement resolve_placement(const Placement& p, const Engine& engine, const std::string& dataset,
                                    bool need_dataset) {
  if (p.count <= 0) throw FieldError("count", "must be > 0, got " + std::to_string(p.count));
  ResolvedPlacement out;
  out.requested = p;
  out.count = p.count;
  const PlacementOverrides split = split_placement_overrides(p.overrides);
  const std::vector<std::string>& device_overrides = split.device;
  const std::vector<std::string>& framework_overrides = split.framework;
  const std::vector<std::string>& system_overrides = split.system;
  out.framework = engine.real_backend() ? std::make_shared<const FrameworkSpec>()
                                        : cached_framework(p.framework, engine.name(), framework_overrides);
  if (!engine.real_backend()) {
    out.device = cached_device(engine, device_yaml_path(p.device), device_overrides);
    const DeviceConfig& d = *out.device;
    out.system = cached_system(p.system.empty() ? d.default_system : p.system, system_overrides);
    const SystemSpec& s = *out.system;
    if (std::find(s.devices.begin(), s.devices.end(), d.name) == s.devices.end())
      throw FieldError("system", "system '" + s.name + "' does not hold device '" + d.name + "' (it holds: " +
                                     join_names(s.devices) + ")");
  }
  out.framework_build = cpu_build_in_framework_name(p.framework);
  engine.check_placement(out);
  if (need_dataset && !dataset.empty()) out.dataset = cached_dataset(dataset);
  return out;
}

PreparedRequest prepare_request(const PredictRequest& r) {
  check_request_fields(r);
  PreparedRequest p;
  p.options.batch = r.batch_per_device;
  p.options.task = r.task;
  p.options.precision = request_precision(r);
  p.spec = find_model(r.model, r.onnx);
  if (r.seq_len > 0) apply_seq_len(p.spec, r.seq_len);
  // The request's corpus instead of the model file's (--dataset, a reference row's column).
  if (!r.dataset.empty()) {
    find_dataset(r.dataset, "dataset");  // a misspelt name is the flag's error, whatever the data
    p.spec.dataset = r.dataset;
  }
  // Real data needs the model's dataset (decode and augmentation cost per sample); an
  // imported ONNX file names none.
  if (r.data == DataSource::real && p.spec.dataset.empty())
    throw FieldError("data", "model '" + r.model + "' names no dataset (an imported ONNX model): use synthetic data");
  std::string opt = r.optimizer.empty() ? p.spec.optimizer : r.optimizer;
  if (!parse_optimizer(opt, p.options.training_options.optimizer))
    throw FieldError("optimizer", "unknown optimizer '" + opt + "' (sgd_momentum|adam)");
  std::string engine_name = r.engine.empty() ? engine_for_device(r.placement.device) : r.engine;
  try {
    p.engine = &cached_engine(engine_name);
  } catch (const UserError& e) {
    if (!r.engine.empty()) throw;
    // The name came from the device file: say which file and line, not just the name.
    const std::string path = device_yaml_path(r.placement.device);
    throw UserError(yaml_location(path, load_config_yaml(path)["engine"]) + ": engine: " + e.what());
  }
  p.placement = resolve_placement(r.placement, *p.engine, p.spec.dataset, r.data == DataSource::real);
  p.options.training_options.replicas = p.placement.replicas;
  std::string shapes;
  for (const auto& [name, s] : r.onnx.input_shapes) shapes += name + "=" + shape_str(s) + ";";
  const auto key_of = [&](const ModelSpec& spec) {
    std::string key = spec.file + "|" + std::to_string(spec.input.empty() ? 0 : spec.input[0]) + "|" + shapes + "|" +
                      std::to_string(p.options.batch) + "|" + precision_name(p.options.precision) + "|" +
                      optimizer_name(p.options.training_options.optimizer) + "|" +
                      std::to_string(p.options.training_options.replicas);
    if (r.task == Task::inference) key += "|inference";
    return key;
  };
  // A loader that bins sequences by length: the step runs at the bins' mean padded length.
  if (r.data == DataSource::real && p.placement.dataset && is_token_model(p.spec) && !p.spec.input.empty()) {
    const auto bin = p.placement.framework->sequence_bin_tokens_by_length.find(p.spec.input[0]);
    const DatasetSpec& ds = *p.placement.dataset;
    if (bin != p.placement.framework->sequence_bin_tokens_by_length.end() && ds.document_tokens_mean > 0 &&
        bin->second < bin->first) {
      PreparedRequest::Binned b{p.spec, key_of(p.spec),
                                bert_pair_bins(bin->first, bin->second, ds.document_tokens_mean,
                                               ds.sentence_tokens_mean, p.options.batch)};
      apply_seq_len(p.spec, step_tokens(b.bins));
      // Tokens a sample holds (its padding is not data).
      p.spec.tokens_per_sample = std::llround(b.bins.mean_sample_tokens);
      p.binned = std::move(b);
    }
  }
  p.graph_key = key_of(p.spec);
  return p;
}

StepReport run_prepared(const PredictRequest& r, const PreparedRequest& p, const OpGraph& g) {
  StepRequest req;
  req.graph = &g;
  req.model = p.spec.name;
  req.placement = p.placement;
  req.data = r.data;
  req.steps = r.steps;
  req.warmup = r.warmup;
  req.seed = r.seed;
  req.threads = r.threads;
  req.trace_path = r.trace_path;
  req.vcd_path = r.vcd_path;
  if (!p.engine->has_trace() && !r.trace_path.empty())
    throw FieldError("trace", "the " + p.engine->name() + " engine has no timeline to record; traces come from the "
                              "tpu_systemc engine (a TPU device) and the analytical engine (an estimated per-op one)");
  if (!p.engine->has_timeline() && !r.vcd_path.empty())
    throw FieldError("vcd", "the " + p.engine->name() + " engine has no simulated timeline to record; waveforms come "
                            "from the tpu_systemc engine (a TPU device)");
  req.progress = r.progress;
  req.micro_batches = micro_batches_of(r, *p.engine, g, p.placement.replicas);
  // The host and framework side of the step, once for every engine (host_pass.hpp): the
  // input pipeline's time before the step, the rest around the engine's device step.
  req.host_batch_s = host_batch_s(req, g) * req.micro_batches;
  StepReport rep = p.engine->run_step(req);
  apply_host_pass(req, g, rep);
  // nvidia-smi / top's view of the step (monitoring.hpp), before the power model reads its
  // kernel-resident share.
  apply_monitoring(req, g, rep);
  apply_run_costs(p.placement, p.engine->real_backend(), p.spec.tokens_per_sample, g, rep);
  // A rate in a spec so small that a time overflows double (fp32_tflops: 1e-310) gave
  // step_time_s inf, printed as null, with throughput 0 and exit 0: an error instead.
  for (const auto& [what, v] : {std::pair<const char*, double>{"step time", rep.step_time_s},
                                {"throughput", rep.throughput_samples_per_s},
                                {"compile time", rep.compile_time_s},
                                {"energy per step", rep.energy_per_step_j}})
    if (!std::isfinite(v))
      throw UserError(std::string(p.placement.device ? p.placement.device->file : r.placement.device) + ": the " + what +
                      " of this prediction is not a finite number (" + std::to_string(v) +
                      "): a rate in the device, system or framework YAML is too small (or a time too large) for it");
  rep.model = p.spec.name;
  rep.precision = precision_name(p.options.precision);
  rep.data = data_source_name(r.data);
  rep.task = g.task;
  return rep;
}

void check_request(const PredictRequest& r) { prepare_request(r); }

StepReport run_prepared_binned(const PredictRequest& r, const PreparedRequest& p, const GraphProvider& graph_of) {
  StepReport rep = run_prepared(r, p, graph_of(p.spec, p.options, p.graph_key));
  if (!p.binned) return rep;
  // The memory peak is the longest bin's step (what an allocator must hold for the run).
  PreparedRequest longest = p;
  longest.spec = p.binned->longest;
  longest.graph_key = p.binned->graph_key;
  longest.binned.reset();
  const StepReport full = run_prepared(r, longest, graph_of(longest.spec, longest.options, longest.graph_key));
  rep.memory_bytes = full.memory_bytes;
  rep.memory_capacity_bytes = full.memory_capacity_bytes;
  rep.fits_in_memory = full.fits_in_memory;
  for (const auto& [k, v] : full.extra.items())
    if (k.rfind("memory_", 0) == 0 || k == "gpu_mem_used_bytes") rep.extra[k] = v;
  const SequenceBins& bins = p.binned->bins;
  rep.extra["seq_len_max_tokens"] = bins.max_tokens;
  rep.extra["seq_bin_tokens"] = bins.bin_tokens;
  rep.extra["seq_bin_batch"] = bins.batch;
  rep.extra["seq_len_step_tokens"] = p.spec.input[0];
  rep.extra["seq_len_mean_padded_tokens"] = bins.mean_padded_tokens;
  rep.extra["seq_len_mean_sample_tokens"] = bins.mean_sample_tokens;
  return rep;
}

StepReport predict(const PredictRequest& r) {
  PreparedRequest p = prepare_request(r);
  std::map<std::string, OpGraph> graphs;
  return run_prepared_binned(r, p, [&](const ModelSpec& spec, const GraphOptions& o, const std::string& key) -> const OpGraph& {
    auto it = graphs.find(key);
    if (it == graphs.end()) it = graphs.emplace(key, build_graph(spec, o)).first;
    return it->second;
  });
}

}  // namespace xpusim
