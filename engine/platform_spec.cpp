#include "engine/platform_spec.hpp"

#include <algorithm>
#include <filesystem>
#include <mutex>

#include "common/suggest.hpp"
#include "models/zoo.hpp"

namespace xpusim {

namespace fs = std::filesystem;

namespace {
using checks::non_negative;

constexpr Topology kTopologies[] = {Topology::none,      Topology::ring,     Topology::pcie_tree,
                                    Topology::nvlink_bridge_pairs, Topology::nvlink_hybrid_cube_mesh,
                                    Topology::nvswitch,  Topology::ici_torus, Topology::ethernet};

LinkSpec read_link(const YAML::Node& n, const std::string& file, const std::string& ctx) {
  SpecReader r(n, file, ctx);
  LinkSpec l;
  std::vector<std::string> names;
  for (Topology t : kTopologies) names.push_back(topology_name(t));
  const std::string topology = r.text("topology", std::string("none"), "how devices are connected", names);
  for (Topology t : kTopologies)
    if (topology == topology_name(t)) l.topology = t;
  l.bandwidth_gbps = r.number("bandwidth_gbps", 0.0, "GB/s", "per-device bandwidth for collectives, one direction", non_negative);
  l.latency_us = r.number("latency_us", 0.0, "us", "latency per hop", non_negative);
  l.allreduce_efficiency = r.number(
      "allreduce_efficiency", 0.0, "fraction",
      "share of bandwidth_gbps a gradient all-reduce reaches on this fabric (the collective library of the "
      "system's era); 0 = the device's allreduce_efficiency",
      [](double v) { return v >= 0 && v <= 1 ? "" : "must be in [0, 1]"; });
  r.finish();
  return l;
}
}  // namespace

const char* topology_name(Topology t) {
  switch (t) {
    case Topology::none: return "none";
    case Topology::ring: return "ring";
    case Topology::pcie_tree: return "pcie_tree";
    case Topology::nvlink_bridge_pairs: return "nvlink_bridge_pairs";
    case Topology::nvlink_hybrid_cube_mesh: return "nvlink_hybrid_cube_mesh";
    case Topology::nvswitch: return "nvswitch";
    case Topology::ici_torus: return "ici_torus";
    case Topology::ethernet: return "ethernet";
  }
  return "?";
}

const std::vector<std::string>& system_fittable_fields() {
  static const std::vector<std::string> f = {
      "intra_host.bandwidth_gbps", "intra_host.latency_us", "intra_host.allreduce_efficiency",
      "inter_host.bandwidth_gbps", "inter_host.latency_us", "inter_host.allreduce_efficiency",
      "host.core_speed",           "host.pcie_bandwidth_gbps", "host.staging_gbps",
      "host.step_overhead_ms"};
  return f;
}

namespace {
// The value of a dotted key of the file (a null node when a level is missing).
YAML::Node dotted(const YAML::Node& root, const std::string& key) {
  YAML::Node n;
  n.reset(root);
  size_t p = 0;
  while (true) {
    const size_t q = key.find('.', p);
    if (!n.IsMap()) return YAML::Node();
    YAML::Node next = n[key.substr(p, q == std::string::npos ? q : q - p)];
    if (!next.IsDefined()) return YAML::Node();
    n.reset(next);  // rebind (yaml-cpp's operator= would overwrite the node's content)
    if (q == std::string::npos) return n;
    p = q + 1;
  }
}

// `calibrate:` of a system: each entry a fittable field the file sets to a positive value.
// Errors name the entry's line ("file:line: calibrate: ...").
std::vector<std::string> read_calibrate(SpecReader& r, const YAML::Node& root, const std::string& path) {
  std::vector<std::string> out;
  YAML::Node list = r.child("calibrate", "fields a system calibration may fit (dotted keys, docs/validation.md)");
  if (!list || list.IsNull()) return out;
  if (!list.IsSequence() || list.size() == 0) r.fail("calibrate", "expected a non-empty list of dotted field names");
  const auto& known = system_fittable_fields();
  for (const auto& e : list) {
    const std::string k = e.IsScalar() ? e.Scalar() : "";
    auto fail = [&](const std::string& msg) { throw UserError(yaml_location(path, e) + ": calibrate: " + msg); };
    if (std::find(known.begin(), known.end(), k) == known.end()) {
      std::string names;
      for (const auto& n : known) names += (names.empty() ? "" : ", ") + n;
      fail("'" + k + "' is not a fittable system field (" + names + ")");
    }
    if (std::find(out.begin(), out.end(), k) != out.end()) fail("'" + k + "' listed twice");
    const YAML::Node v = dotted(root, k);
    // The fit works in log space: 0 ("the device's", "not limited") cannot be a starting point.
    if (!v || !v.IsScalar() || !(v.as<double>(0) > 0))
      fail("'" + k + "' must be set in this file to a value > 0 to be fitted");
    out.push_back(k);
  }
  return out;
}
}  // namespace

SystemSpec load_system_spec(const std::string& path, const std::vector<std::string>& overrides) {
  YAML::Node root = load_config_yaml(path);
  apply_overrides(root, overrides, "set");  // a fresh parse per call: nothing shared is changed
  SpecReader r(root, path);
  SystemSpec s;
  s.file = path;
  s.name = r.text("name", std::nullopt, "system name, as a request's system field gives it");
  s.description = r.text("description", std::string(""), "one line");
  s.default_device = r.text("default_device", std::nullopt, "device used when a request names none");
  if (r.has("devices")) {
    YAML::Node d = r.child("devices", "device names this system can hold");
    if (!d.IsSequence()) r.fail("devices", "expected a list of device names");
    for (const auto& e : d) {
      if (!e.IsScalar()) r.fail("devices", "expected a list of device names");
      s.devices.push_back(e.Scalar());
    }
  } else {
    r.child("devices", "device names this system can hold");
    s.devices = {s.default_device};
  }
  s.max_devices = static_cast<int>(r.integer("max_devices", 1, "devices", "most devices one job can use",
                                             [](long long v) { return v > 0 && v <= 65536 ? "" : "must be in [1, 65536]"; }));
  s.devices_per_host = static_cast<int>(r.integer("devices_per_host", s.max_devices, "devices", "devices in one host",
                                                  [](long long v) { return v > 0 ? "" : "must be > 0"; }));
  s.intra_host = read_link(r.child("intra_host", "links between devices of one host"), path, "intra_host");
  s.inter_host = read_link(r.child("inter_host", "network between hosts"), path, "inter_host");
  {
    SpecReader h(r.child("host", "the host CPU that feeds the devices"), path, "host");
    s.host.cpu_cores = static_cast<int>(h.integer("cpu_cores", 8, "cores", "cores for the input pipeline",
                                                  [](long long v) { return v > 0 ? "" : "must be > 0"; }));
    s.host.core_speed = h.number("core_speed", 1.0, "x", "speed of one core relative to the dataset's reference core",
                                 [](double v) { return v > 0 ? "" : "must be > 0"; });
    s.host.pcie_bandwidth_gbps = h.number("pcie_bandwidth_gbps", 12.0, "GB/s", "host-to-device bandwidth per device",
                                          [](double v) { return v > 0 ? "" : "must be > 0"; });
    s.host.staging_gbps = h.number("staging_gbps", 0.0, "GB/s",
                                   "aggregate host bandwidth for collectives staged in host memory (GPUs without "
                                   "peer-to-peer); 0 = each device's link alone limits",
                                   non_negative);
    s.host.step_overhead_ms = h.number("step_overhead_ms", 0.0, "ms", "extra host overhead per step", non_negative);
    s.host.idle_power_w = h.number("idle_power_w", 0.0, "W",
                                   "power of one host apart from its devices, counted for energy (docs/power.md)", non_negative);
    s.host.threads_per_core = static_cast<int>(
        h.integer("threads_per_core", 1, "threads",
                  "hardware threads per physical core (SMT); cpu_cores then counts hardware threads; 1 = every "
                  "counted core is independent",
                  [](long long v) { return v >= 1 && v <= 8 ? "" : "must be in [1, 8]"; }));
    if (s.host.cpu_cores % s.host.threads_per_core != 0)
      h.fail("threads_per_core", "must divide cpu_cores (" + std::to_string(s.host.cpu_cores) + " hardware threads)");
    s.host.smt_yield = h.number("smt_yield", HostSpec{}.smt_yield, "x",
                                "work a core's second and later hardware threads add, as a share of one thread's "
                                "(applies when threads_per_core > 1)",
                                [](double v) { return v >= 0 && v <= 1 ? "" : "must be in [0, 1]"; });
    h.finish();
  }
  const std::string collective = r.text("collective", std::string("ring"), "gradient exchange: ring all-reduce or parameter server",
                        {"ring", "parameter_server"});
  s.collective = collective == "parameter_server" ? Collective::parameter_server : Collective::ring;
  s.source = r.text("source", std::string(""), "where the facts come from");
  s.calibrate = read_calibrate(r, root, path);
  r.finish();
  return s;
}

SystemSpec find_system(const std::string& name_or_path, const std::string& field) {
  return load_system_spec(find_config_file("systems", name_or_path, field, "system"));
}

std::map<std::string, DatasetSpec> load_datasets_file(const std::string& path) {
  YAML::Node root = load_config_yaml(path);
  if (!root.IsMap()) throw UserError(path + ": expected a mapping of dataset name -> fields");
  std::map<std::string, DatasetSpec> out;
  for (const auto& kv : root) {
    std::string name = kv.first.as<std::string>();
    SpecReader r(kv.second, path, name);
    DatasetSpec d;
    d.name = name;
    d.description = r.text("description", std::string(""), "one line");
    d.train_examples = r.integer("train_examples", std::nullopt, "samples", "training-set size (one epoch)",
                                 [](long long v) { return v > 0 ? "" : "must be > 0"; });
    d.test_examples = r.integer("test_examples", 0, "samples", "evaluation-set size", non_negative);
    d.host_preprocess_ms = r.number("host_preprocess_ms", 0.0, "ms", "decode + augmentation per sample on one reference core",
                                    non_negative);
    d.stored_bytes_per_example = r.integer("stored_bytes_per_example", 0, "bytes", "size of one sample on disk",
                                           non_negative);
    d.document_tokens_mean =
        r.number("document_tokens_mean", 0.0, "tokens",
                 "text corpora: mean length of a document, in the model's tokens (what sentence pairs are cut "
                 "from; a loader that bins sequences by length reads it); 0 = not stated",
                 [](double v) { return v >= 0 && v <= 1e9 ? "" : "must be in [0, 1e9]"; });
    d.sentence_tokens_mean = r.number("sentence_tokens_mean", 0.0, "tokens",
                                      "text corpora: mean length of a sentence, in tokens; 0 = not stated",
                                      [](double v) { return v >= 0 && v <= 1e9 ? "" : "must be in [0, 1e9]"; });
    if ((d.document_tokens_mean > 0) != (d.sentence_tokens_mean > 0))
      r.fail(d.document_tokens_mean > 0 ? "sentence_tokens_mean" : "document_tokens_mean",
             "give document_tokens_mean and sentence_tokens_mean together");
    d.source = r.text("source", std::string(""), "where the numbers come from");
    r.finish();
    out[name] = d;
  }
  return out;
}

// Parsed once per version of the file (path, size, modification time, as load_config_yaml's
// cache): a study looks a dataset up per target and the study fuzzer per input, and parsing
// the whole file each time was most of that work.
std::map<std::string, DatasetSpec> load_datasets() {
  const std::string path = (fs::path(config_dir()) / "datasets.yaml").string();
  static std::mutex mu;
  static std::string memo_path;
  static fs::file_time_type memo_mtime;
  static std::uintmax_t memo_size = 0;
  static std::map<std::string, DatasetSpec> memo;
  std::error_code ec;
  const auto mtime = fs::last_write_time(path, ec);
  const auto size = ec ? 0 : fs::file_size(path, ec);
  std::lock_guard<std::mutex> lock(mu);
  if (!ec && path == memo_path && mtime == memo_mtime && size == memo_size) return memo;
  std::map<std::string, DatasetSpec> out = load_datasets_file(path);  // errors are not memoised
  if (!ec) {
    memo_path = path;
    memo_mtime = mtime;
    memo_size = size;
    memo = out;
  }
  return out;
}

DatasetSpec find_dataset(const std::string& name, const std::string& field) {
  auto all = load_datasets();
  auto it = all.find(name);
  if (it == all.end()) {
    std::vector<std::string> known;
    for (const auto& kv : all) known.push_back(kv.first);
    const std::string hint = did_you_mean(name, known);
    throw FieldError(field, "unknown dataset '" + name + "'" + (hint.empty() ? "" : "; " + hint) +
                                " (see configs/datasets.yaml)");
  }
  return it->second;
}

}  // namespace xpusim
