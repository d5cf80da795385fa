// Specs shared by every engine: systems (how devices are wired and fed, configs/systems/)
// and datasets (configs/datasets.yaml). Each YAML node is parsed once into these immutable
// structs; engines read only the fields they model.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "common/spec_reader.hpp"

namespace xpusim {

// How the devices of a link are wired; the collective cost model (parallel/topology.hpp)
// dispatches on it. The names are the YAML values.
enum class Topology { none, ring, pcie_tree, nvlink_bridge_pairs, nvlink_hybrid_cube_mesh, nvswitch, ici_torus, ethernet };
const char* topology_name(Topology t);

struct LinkSpec {
  Topology topology = Topology::none;
  double bandwidth_gbps = 0;     // GB/s per direction available to one device for collectives
  double latency_us = 0;         // per message hop
  // Share of bandwidth_gbps a gradient all-reduce reaches on this fabric with the collective
  // library of the system's era (NCCL 2.x over a PCIe tree); 0 = the device's
  // allreduce_efficiency (fitted on the 2017 stacks, NCCL 1.x). A framework profile's
  // allreduce_efficiency still replaces both (issue 29).
  double allreduce_efficiency = 0;
};

struct HostSpec {
  int cpu_cores = 8;                  // physical cores available to the input pipeline
  double core_speed = 1.0;            // relative to the reference core of the dataset costs
  double pcie_bandwidth_gbps = 12;    // host -> one device, GB/s (infeed)
  // Aggregate GB/s per direction through the CPUs' root complexes for collectives staged in
  // host memory (GPUs that cannot reach each other peer-to-peer share it); 0 = not limited
  // beyond each device's own link.
  double staging_gbps = 0;
  double step_overhead_ms = 0;        // framework/launch overhead per step on this host
  double idle_power_w = 0;            // the host itself (CPUs, DRAM, board, fans, PSU loss), per host, for energy
  // Simultaneous multithreading: cpu_cores then counts hardware threads, threads_per_core of
  // them on each physical core, and a core running them all does 1 + smt_yield x (threads - 1)
  // times one thread's work. A pipeline that states its threads (DataLoader workers) gets a
  // core per thread up to the physical cores and smt_yield of one for each thread past them
  // (predict/host_pass.cpp); one on every core (tf.data) keeps cpu_cores, the datasets' unit
  // being per hardware thread of a fully loaded host. 1 = independent cores, as before.
  int threads_per_core = 1;
  double smt_yield = 0.3;
};

// How data-parallel gradients are exchanged: ring all-reduce (NCCL, replicated) or a
// parameter server on the host CPU (tf_cnn_benchmarks' parameter_server mode).
enum class Collective { ring, parameter_server };

struct SystemSpec {
  std::string name;
  std::string description;
  std::string file;
  std::string default_device;
  std::vector<std::string> devices;   // device names this system can hold
  int max_devices = 1;                // per job (across hosts)
  int devices_per_host = 1;
  LinkSpec intra_host;
  LinkSpec inter_host;
  HostSpec host;
  Collective collective = Collective::ring;
  std::string source;
  // Fields `xpusim calibrate --system` may fit (dotted keys, e.g. intra_host.allreduce_efficiency),
  // each one of system_fittable_fields() and > 0 in the file (the fit works in log space).
  std::vector<std::string> calibrate;
};

// The numeric system fields a `calibrate:` list may name: the links' bandwidth, latency and
// all-reduce efficiency and the host's rates and per-step overhead (not counts nor power).
const std::vector<std::string>& system_fittable_fields();

// `overrides` (KEY=VALUE, dotted keys) are applied to the file's YAML before it is read, so a
// trial value is validated like the file's own (FieldError naming "set" for a malformed one).
SystemSpec load_system_spec(const std::string& path, const std::vector<std::string>& overrides = {});
// By name (configs/systems/NAME.yaml) or path; FieldError naming `field` when unknown.
SystemSpec find_system(const std::string& name_or_path, const std::string& field = "system");

struct DatasetSpec {
  std::string name;
  std::string description;
  int64_t train_examples = 0;
  int64_t test_examples = 0;
  double host_preprocess_ms = 0;  // decode + augmentation of one training sample on one reference core (real data)
  int64_t stored_bytes_per_example = 0;  // as read from disk (e.g. JPEG)
  // Text corpora that sequence samples are cut from (predict/sequence_bins.hpp): mean tokens of
  // a document and of a sentence; 0 = not stated (a binning loader then pads to the full length).
  double document_tokens_mean = 0;
  double sentence_tokens_mean = 0;
  std::string source;
};

// configs/datasets.yaml: a mapping name -> dataset.
std::map<std::string, DatasetSpec> load_datasets();
// The same format from any file, uncached by version (tests, the datasets_yaml fuzzer).
std::map<std::string, DatasetSpec> load_datasets_file(const std::string& path);
DatasetSpec find_dataset(const std::string& name, const std::string& field = "dataset");

}  // namespace xpusim
