#include "engine/framework_spec.hpp"

#include <algorithm>
#include <filesystem>

#include "common/config_paths.hpp"
#include "common/error.hpp"
#include "common/spec_reader.hpp"
#include "engine/framework_base.hpp"

namespace xpusim {

namespace fs = std::filesystem;

namespace {
using checks::non_negative;
using checks::positive;

std::vector<std::string> strings(SpecReader& r, const std::string& key, const std::string& desc) {
  std::vector<std::string> out;
  YAML::Node n = r.child(key, desc);
  if (!n || n.IsNull()) return out;  // child() returns a null node for a missing key
  if (!n.IsSequence()) r.fail(key, "expected a list of names");
  for (const auto& e : n) {
    if (!e.IsScalar() || e.Scalar().empty()) r.fail(key, "expected a list of names");
    out.push_back(e.Scalar());
  }
  return out;
}
}  // namespace

namespace {
FrameworkSpec parse_framework_spec(const YAML::Node& root, const std::string& path, std::vector<FieldDoc>* fields,
                                   const FrameworkBase& base = {});
void check_base(const YAML::Node& base, const std::string& path) { parse_framework_spec(base, path, nullptr); }
}  // namespace

const std::vector<FrameworkFieldScope>& framework_field_scopes() {
  // The tpu_systemc engine simulates its own collectives, kernels, memory and infeed queue:
  // it takes the host-side fields (step overhead, the input pipeline's threads and cost,
  // compile time) and none of these. Every field not listed applies to every engine.
  static const std::vector<FrameworkFieldScope> scopes = {
      {"device_step_overhead_ms", {"analytical"}},   // host split / merge per extra GPU (multi_gpu_model)
      {"host_dispatch_us_per_op", {"analytical"}},   // bounds a prefetched (GPU) step by the host's dispatch
      {"input_mode", {"analytical"}},                // a device loader (DALI) on GPUs
      {"device_decode_us_per_sample", {"analytical"}},
      {"device_decode_reference_ms", {"analytical"}},
      {"strategy", {"analytical"}},                  // the gradient exchange of the analytical composer
      {"gradient_exchange", {"analytical"}},
      {"conv_layout", {"analytical"}},               // NCHW transposes around tensor-core convolutions
      {"conv_layout_fp32", {"analytical"}},          // the same for fp32/TF32 runs (default conv_layout)
      {"allreduce_efficiency", {"analytical"}},
      {"allreduce_bucket_mb", {"analytical"}},       // the composer's gradient buckets
      {"compute_efficiency_scale", {"analytical"}},  // roofline kernel efficiencies
      {"tensor_efficiency_scale", {"analytical"}},
      {"memory_efficiency_scale", {"analytical"}},
      {"op_overhead_scale", {"analytical"}},
      {"kernel_compute_efficiency_scale", {"analytical"}},  // the GPU kernel model's efficiencies
      {"kernel_tensor_efficiency_scale", {"analytical"}},
      {"kernel_memory_efficiency_scale", {"analytical"}},
      {"first_layer_input_channels_padded_to", {"analytical"}},  // the GPU kernel model's first layer
      {"gemm_dims_padded_to", {"analytical"}},  // GPUs: tensor-core GEMM alignment
      {"memory_overhead_fraction", {"analytical"}},  // the analytical memory estimate
      {"extra_weight_copies", {"analytical"}},
      {"memory_pool_reserve_fraction", {"analytical"}},
      {"flash_attention", {"analytical"}},           // the large-model planner (GPU decoders)
      {"dropout", {"analytical"}},
      {"tp_comm_overlap", {"analytical"}},
      {"allocator_reserved_fraction", {"analytical"}},  // GPU memory as nvidia-smi shows it
      {"recurrent_gate_gemms", {"analytical"}},         // CPU thread pool: LSTM dots per timestep
      {"conv_workspace_limit_mb", {"analytical"}},      // cuDNN algorithm choice under a workspace cap
      {"conv_capped_efficiency", {"analytical"}},
      {"fp32_unfused_update_kernels", {"analytical"}},   // the fp32 path's optimizer kernels
      {"fp32_unfused_update_accesses", {"analytical"}},
      {"serial_towers", {"analytical"}},                 // data-parallel towers that take turns
      {"session_run", {"analytical"}},                   // the device file's per-step session run
      {"fused_bn_activation_half", {"analytical"}},     // BN + (add) + ReLU as one kernel in 16 bits
      {"kernel_tf32_efficiency_scale", {"analytical"}},  // TF32 tensor kernels vs the stack's 16-bit ones
  };
  return scopes;
}

YAML::Node load_framework_yaml(const std::string& path) {
  YAML::Node root = load_config_yaml(path);
  add_framework_base(root, path, check_base);
  return root;
}

FrameworkSpec load_framework_spec(const std::string& path, const std::vector<std::string>& overrides) {
  YAML::Node root = load_config_yaml(path);
  apply_overrides(root, overrides);  // on the profile's own keys: what it sets wins over its base
  const FrameworkBase base = add_framework_base(root, path, check_base);
  return parse_framework_spec(root, path, nullptr, base);
}

std::vector<FieldDoc> framework_spec_fields(const std::string& path) {
  std::vector<FieldDoc> fields;
  parse_framework_spec(load_framework_yaml(path), path, &fields);
  return fields;
}

namespace {
FrameworkSpec parse_framework_spec(const YAML::Node& root, const std::string& path, std::vector<FieldDoc>* fields,
                                   const FrameworkBase& base) {
  SpecReader r(root, path);
  for (const auto& key : base.keys) r.taken_from(key, base.path);
  FrameworkSpec f;
  f.file = path;
  f.name = r.text("name", std::nullopt, "profile name (the file stem)");
  f.description = r.text("description", std::string(""), "one line");
  f.base = r.text("base", std::string(""),
                  "file stem of the profile this one starts from: every field not set here is the base's (not its "
                  "name, names, versions, description, source or calibrate); empty = none");
  f.names = strings(r, "names", "framework names of the reference CSV that mean this stack");
  f.engines = strings(r, "engines", "engines the profile applies to");
  f.versions = strings(r, "versions",
                       "versions of the stack this profile is for, as a reference row's framework_version (glob "
                       "patterns: * = any run of characters); empty = any version no other profile of the name claims");
  if (f.engines.empty()) r.fail("engines", "name at least one engine (analytical, tpu_systemc)");
  f.step_overhead_ms = r.number("step_overhead_ms", 0.0, "ms", "host time per training step, not overlapped", non_negative);
  f.device_step_overhead_ms = r.number("device_step_overhead_ms", 0.0, "ms",
                                       "host time per step for each device beyond the first", non_negative);
  f.host_dispatch_us_per_op =
      r.number("host_dispatch_us_per_op", 0.0, "us",
               "host time to dispatch each op of the step graph on one thread, ahead of the device (asynchronous "
               "launches): the step is at least the ops' dispatch time; 0 = hidden, as in the calibration stack",
               non_negative);
  const std::string mode = r.text("input_mode", std::string("host_pipeline"), "where decode + augmentation run",
                                  {"host_pipeline", "device_loader"});
  f.input_mode = mode == "device_loader" ? InputMode::device_loader : InputMode::host_pipeline;
  f.input_threads = static_cast<int>(r.integer("input_threads", 0, "threads",
                                               "host threads of the input pipeline (0 = all host cores)",
                                               [](long long v) { return v >= 0 && v <= 4096 ? "" : "must be in [0, 4096]"; }));
  f.input_workers_per_device = static_cast<int>(
      r.integer("input_workers_per_device", 0, "processes",
                "input worker processes per training process (one per device, e.g. PyTorch DataLoader num_workers): "
                "the pipeline's threads are this x the devices a host feeds, capped at its cores; 0 = input_threads",
                [](long long v) { return v >= 0 && v <= 4096 ? "" : "must be in [0, 4096]"; }));
  if (f.input_workers_per_device > 0 && f.input_threads > 0)
    r.fail("input_workers_per_device", "give input_threads or input_workers_per_device, not both");
  f.input_cost_scale = r.number("input_cost_scale", 1.0, "x", "per-sample host cost relative to the dataset's tf.data cost",
                                positive);
  f.device_decode_us_per_sample = r.number("device_decode_us_per_sample", 0.0, "us",
                                           "device_loader: accelerator time per sample", non_negative);
  f.device_decode_reference_ms =
      r.number("device_decode_reference_ms", 0.0, "ms",
               "device_loader: the dataset host cost per sample device_decode_us_per_sample is stated for "
               "(0 = every sample costs it)",
               non_negative);
  f.compile_base_s = r.number("compile_base_s", 0.0, "s", "one-off graph build / compile per job", non_negative);
  f.compile_per_op_ms = r.number("compile_per_op_ms", 0.0, "ms", "one-off compile time per op of the step graph",
                                 non_negative);
  const std::string strat = r.text("strategy", std::string("system"), "multi-device strategy",
                                   {"system", "gather_on_first"});
  f.strategy = strat == "gather_on_first" ? MultiDeviceStrategy::gather_on_first : MultiDeviceStrategy::system;
  f.exchange_in_compute_precision =
      r.text("gradient_exchange", std::string("compute"),
             "precision of the gradient exchange under mixed precision: compute (16-bit, the default) or fp32",
             {"compute", "fp32"}) == "compute";
  f.allreduce_bucket_mb = r.number(
      "allreduce_bucket_mb", 0.0, "MiB",
      "data parallelism: consecutive gradients are all-reduced in buckets of up to this size, each launched when its "
      "last gradient is ready, and the optimizer step runs after the last bucket (PyTorch DDP's bucket_cap_mb, 25 by "
      "default); 0 = one all-reduce per gradient tensor, each weight updated as its exchange ends",
      [](double v) { return v >= 0 && v <= 1e6 ? "" : "must be in [0, 1e6] MiB"; });
  f.allreduce_efficiency = r.number(
      "allreduce_efficiency", 0.0, "fraction",
      "the stack's gradient all-reduce as a share of the system's link bandwidth (its collective library: NCCL 2.x "
      "in the NGC containers), replacing the device's allreduce_efficiency; 0 = the device's",
      [](double v) { return v >= 0 && v <= 1 ? "" : "is a fraction in [0, 1]"; });
  const std::string fp32_math =
      r.text("fp32_math", std::string("fp32"),
             "what the stack's fp32 convolutions and matmuls run in on GPUs with TF32 tensor cores (Ampere and "
             "later): tf32 (NGC PyTorch, TensorFlow >= 2.4 and NVIDIA's TF 1.15 builds by default), tf32_convs "
             "(convolutions in TF32, matmuls strict fp32: PyTorch >= 1.12's defaults) or fp32",
             {"fp32", "tf32", "tf32_convs"});
  f.fp32_as_tf32 = fp32_math != "fp32";
  f.fp32_matmul_strict = fp32_math == "tf32_convs";
  f.tpu_fp32_storage = r.text("tpu_tensor_storage", std::string("compute"),
                              "dtype of the tensors in TPU HBM: compute (the run's precision, bf16 activations) or "
                              "fp32 (an fp32 model whose bf16 exists only inside the MXU)",
                              {"compute", "fp32"}) == "fp32";
  f.nchw_activations =
      r.text("conv_layout", std::string("native"),
             "activation layout around tensor-core convolutions: native (no transposes beyond the calibration "
             "stack's: channels-last, or TensorFlow's own layout choice) or nchw (PyTorch < 1.5: cuDNN transposes "
             "each tensor-core convolution's input and output to NHWC and back, two extra kernels)",
             {"native", "nchw"}) == "nchw";
  f.compute_efficiency_scale = r.number("compute_efficiency_scale", 1.0, "x",
                                        "CUDA-core/SIMD kernel efficiency relative to the calibration stack", positive);
  f.tensor_efficiency_scale = r.number("tensor_efficiency_scale", 1.0, "x",
                                       "tensor-core kernel efficiency relative to the calibration stack", positive);
  f.memory_efficiency_scale = r.number("memory_efficiency_scale", 1.0, "x",
                                       "bandwidth-bound kernel efficiency relative to the calibration stack", positive);
  f.op_overhead_scale = r.number("op_overhead_scale", 1.0, "x", "per-op overhead relative to the calibration stack",
                                 non_negative);
  // Absent = 1: the kernel-model GPU's per-generation constants as fitted (no profile but
  // pytorch_amp_dali and ngc_mxnet sets a roofline scale, so none changes by it).
  f.kernel_compute_efficiency_scale =
      r.number("kernel_compute_efficiency_scale", 1.0, "x",
               "kernel-model GPUs: CUDA-core GEMM efficiency relative to the architecture's constants",
               positive);
  f.kernel_tensor_efficiency_scale =
      r.number("kernel_tensor_efficiency_scale", 1.0, "x",
               "kernel-model GPUs: tensor-core GEMM efficiency relative to the architecture's constants",
               positive);
  f.kernel_memory_efficiency_scale =
      r.number("kernel_memory_efficiency_scale", 1.0, "x",
               "kernel-model GPUs: bandwidth-bound efficiency relative to the architecture's constants",
               positive);
  f.first_layer_input_channels_padded_to = static_cast<int>(r.integer(
      "first_layer_input_channels_padded_to", 0, "channels",
      "mixed precision on kernel-model GPUs: the input pipeline pads the image's channels to this count (DALI "
      "crop_mirror_normalize pad_output: RGB to 4), so the first convolution runs on the tensor cores at the padded "
      "count; 0 = unpadded (a 3-channel first layer misses the tensor cores)",
      [](long long v) { return v == 0 || v == 4 || v == 8 ? "" : "must be 0, 4 or 8"; }));
  f.gemm_dims_padded_to = static_cast<int>(r.integer(
      "gemm_dims_padded_to", 0, "elements",
      "GPUs: the stack pads its GEMM feature dimensions (a language model's vocabulary) to a multiple "
      "of this count, so cuBLAS keeps its 16-byte-aligned tensor-core kernels; 0 = the model's dimensions as stated",
      [](long long v) { return v >= 0 && v <= 4096 && (v & (v - 1)) == 0 ? "" : "must be 0 or a power of two up to 4096"; }));
  f.memory_overhead_fraction = r.number("memory_overhead_fraction", 0.0, "fraction",
                                        "allocator slack and framework copies over tensor memory", non_negative);
  f.extra_weight_copies = static_cast<int>(r.integer("extra_weight_copies", 0, "copies",
                                                     "full weight copies beyond the model's",
                                                     [](long long v) { return v >= 0 && v <= 64 ? "" : "must be in [0, 64]"; }));
  f.memory_pool_reserve_fraction = r.number(
      "memory_pool_reserve_fraction", 0.0, "fraction",
      "share of the device's memory the framework's pool keeps free of tensors (MXNet's MXNET_GPU_MEM_POOL_RESERVE: "
      "0.05 by default); counted in memory_bytes, so a step fits only in the rest",
      [](double v) { return v >= 0 && v < 1 ? "" : "is a fraction in [0, 1)"; });
  // Large-model training (parallel/, `xpusim plan`): how the stack's decoder layers run.
  f.flash_attention = r.flag("flash_attention", false,
                             "decoder attention runs as a fused flash-style kernel (scores never stored, causal "
                             "blocks skipped); false = materialized scores (softmax and dropout through memory)");
  f.dropout = r.flag("dropout", false, "the stack's decoder recipe trains with dropout (masks kept for the backward)");
  f.tp_comm_overlap = r.number(
      "tp_comm_overlap", 0.0, "fraction",
      "share of the tensor-parallel all-gathers / reduce-scatters the stack pipelines with the adjacent GEMMs "
      "under sequence parallelism (Megatron-core tp_comm_overlap, Transformer Engine userbuffers), at most the "
      "GEMMs' time; 0 = on the compute stream (Megatron-LM 2021)",
      [](double v) { return v >= 0 && v <= 1 ? "" : "is a fraction in [0, 1]"; });
  f.fp32_unfused_update_kernels = static_cast<int>(r.integer(
      "fp32_unfused_update_kernels", 0, "kernels",
      "Adam on the fp32/TF32 path (no AMP): tensor ops per parameter tensor when the stack's optimizer is a Python "
      "loop of unfused ops (DeepLearningExamples' BertAdam: 13); 0 = one fused kernel per tensor (apex FusedAdam)",
      [](long long v) { return v >= 0 && v <= 64 ? "" : "must be in [0, 64]"; }));
  f.fp32_unfused_update_accesses = static_cast<int>(r.integer(
      "fp32_unfused_update_accesses", 0, "accesses",
      "with fp32_unfused_update_kernels: fp32 reads + writes per parameter element over those ops (BertAdam: 31; a "
      "fused Adam reads param, grad and both moments and writes three: 7); 0 = the fused kernel's bytes",
      [](long long v) { return v >= 0 && v <= 256 ? "" : "must be in [0, 256]"; }));
  f.fused_bn_activation_half = r.flag(
      "fused_bn_activation_half", false,
      "mixed precision on GPUs: batch norm, a residual add after it and the following ReLU run as one fused kernel "
      "(TensorFlow's _FusedBatchNormEx on NHWC fp16, cuDNN BN_ADD_ACTIVATION), forward and backward; false = one "
      "kernel and one pass over the tensors each");
  f.kernel_tf32_efficiency_scale =
      r.number("kernel_tf32_efficiency_scale", 1.0, "x",
               "kernel-model GPUs, TF32 runs: tensor-core efficiency relative to the stack's 16-bit tensor kernels "
               "(multiplies kernel_tensor_efficiency_scale); 1 = the same share of their peak",
               positive);
  for (const auto& [system, n] :
       r.number_map("input_workers_per_device_by_system", "processes",
                    "input worker processes per device on the named systems (a launcher's per-platform DataLoader "
                    "workers); other systems take input_workers_per_device")) {
    if (n < 1 || n > 4096 || n != static_cast<double>(static_cast<int>(n)))
      r.fail("input_workers_per_device_by_system", system + ": must be a whole number in [1, 4096]");
    // A misspelt system would silently take input_workers_per_device: name the systems there are.
    try {
      find_config_file("systems", system, "input_workers_per_device_by_system", "system");
    } catch (const FieldError& e) {
      r.fail("input_workers_per_device_by_system", e.message());
    }
    f.input_workers_per_device_by_system[system] = static_cast<int>(n);
  }
  if (!f.input_workers_per_device_by_system.empty() && f.input_threads > 0)
    r.fail("input_workers_per_device_by_system", "give input_threads or workers per device, not both");
  f.recurrent_gate_gemms = static_cast<int>(r.integer(
      "recurrent_gate_gemms", 1, "GEMMs",
      "CPUs with the thread-pool model: LSTM contractions h.U per timestep (4: one per gate, Keras 2.0's LSTM; "
      "1: all gates in one)",
      [](long long v) { return v >= 1 && v <= 4 ? "" : "must be 1..4"; }));
  f.allocator_reserved_fraction = r.number(
      "allocator_reserved_fraction", 0.0, "fraction",
      "GPU memory the allocator takes at start-up as a share of the device's (TF 1.x BFC without allow_growth: "
      "nearly all); 0 = what the tensors need (a caching allocator or allow_growth)",
      [](double v) { return v >= 0 && v <= 1 ? "" : "is a fraction in [0, 1]"; });
  f.conv_workspace_limit_mb = r.number(
      "conv_workspace_limit_mb", 0.0, "MB",
      "kernel-model GPUs: the most scratch memory the stack lets cuDNN's algorithm search use per convolution "
      "(MXNet 1.x Convolution's `workspace`, 1024 by default); a 3x3/5x5 stride-1 convolution whose fast "
      "algorithm needs more runs at conv_capped_efficiency; 0 = the calibration stack's choice",
      non_negative);
  f.conv_capped_efficiency = r.number(
      "conv_capped_efficiency", 1.0, "x",
      "speed of the best convolution algorithm within conv_workspace_limit_mb relative to the unconstrained choice",
      [](double v) { return v > 0 && v <= 1 ? "" : "must be in (0, 1]"; });
  f.nchw_activations_fp32 =
      r.text("conv_layout_fp32", std::string(f.nchw_activations ? "nchw" : "native"),
             "conv_layout of the fp32/TF32 runs where it differs from the mixed-precision ones (DeepLearningExamples' "
             "ConvNets launcher from NGC 20.12 sets channels-last for AMP only); default: conv_layout",
             {"native", "nchw"}) == "nchw";
  f.serial_towers = r.flag("serial_towers", false,
                           "data-parallel towers take turns on their GPUs (Keras multi_gpu_model on TF 1.13 in the "
                           "2019 Keras study): every GPU waits while the other towers' forward and backward ops run; "
                           "false = the towers run concurrently");
  f.session_run = r.flag("session_run", true,
                         "each step is one run of a graph session (TF 1.x session.run: feeds, executor set-up, host "
                         "sync), whose cost the device file's step_overhead_ms holds; false = a runtime without one "
                         "(kernels launched from a C++ loop, one stream sync per step): that cost is not paid");
  for (const auto& [length, width] :
       r.number_map("sequence_bin_tokens_by_length", "tokens",
                    "real data: model sequence length -> width of the length bins the loader groups samples into, "
                    "padding each batch to its longest sample (LDDL); steps at that length run at the bins' mean "
                    "padded length where the dataset states document and sentence lengths; lengths not listed "
                    "pad every batch to the full length")) {
    long long len = 0;
    try {
      size_t used = 0;
      len = std::stoll(length, &used);
      if (used != length.size()) len = 0;
    } catch (const std::exception&) {
      len = 0;
    }
    if (len <= 0) r.fail("sequence_bin_tokens_by_length", length + ": a sequence length must be a whole number > 0");
    if (width < 1 || width != static_cast<double>(static_cast<long long>(width)) ||
        len % static_cast<long long>(width) != 0)
      r.fail("sequence_bin_tokens_by_length",
             length + ": the bin width must be a whole number > 0 that divides the sequence length");
    f.sequence_bin_tokens_by_length[len] = static_cast<int64_t>(width);
  }
  r.child("calibrate", "fittable constants (numeric top-level keys) for calibrating a framework profile");
  f.source = r.text("source", std::string(""), "where the constants come from / what they were fitted on");
  r.finish();
  for (const auto& scope : framework_field_scopes()) {
    if (scope.engines.empty() || !r.has(scope.field)) continue;
    for (const auto& e : f.engines)
      if (std::find(scope.engines.begin(), scope.engines.end(), e) == scope.engines.end()) {
        std::string on;
        for (const auto& a : scope.engines) on += (on.empty() ? "" : ", ") + a;
        r.fail(scope.field, "applies to the " + on + " engine only, and this profile is for " + e +
                                " (engines): remove it or make a profile per engine");
      }
  }
  if (f.name != fs::path(path).stem().string() && path.find('/') != std::string::npos &&
      fs::path(path).parent_path() == fs::path(config_dir()) / "frameworks")
    r.fail("name", "must equal the file stem '" + fs::path(path).stem().string() + "'");
  if (fields) *fields = r.docs();
  return f;
}

}  // namespace

bool FrameworkSpec::constants_neutral() const {
  const FrameworkSpec d;
  return step_overhead_ms == d.step_overhead_ms && device_step_overhead_ms == d.device_step_overhead_ms &&
         host_dispatch_us_per_op == d.host_dispatch_us_per_op &&
         input_mode == d.input_mode && input_threads == d.input_threads &&
         input_workers_per_device == d.input_workers_per_device && input_cost_scale == d.input_cost_scale &&
         device_decode_us_per_sample == d.device_decode_us_per_sample &&
         device_decode_reference_ms == d.device_decode_reference_ms && compile_base_s == d.compile_base_s &&
         compile_per_op_ms == d.compile_per_op_ms && strategy == d.strategy &&
         compute_efficiency_scale == d.compute_efficiency_scale &&
         tensor_efficiency_scale == d.tensor_efficiency_scale && memory_efficiency_scale == d.memory_efficiency_scale &&
         kernel_compute_efficiency_scale == d.kernel_compute_efficiency_scale &&
         kernel_tensor_efficiency_scale == d.kernel_tensor_efficiency_scale &&
         kernel_memory_efficiency_scale == d.kernel_memory_efficiency_scale &&
         op_overhead_scale == d.op_overhead_scale && memory_overhead_fraction == d.memory_overhead_fraction &&
         extra_weight_copies == d.extra_weight_copies &&
         memory_pool_reserve_fraction == d.memory_pool_reserve_fraction &&
         allreduce_efficiency == d.allreduce_efficiency && allreduce_bucket_mb == d.allreduce_bucket_mb &&
         tpu_fp32_storage == d.tpu_fp32_storage &&
         nchw_activations == d.nchw_activations && nchw_activations_fp32 == d.nchw_activations_fp32 &&
         conv_workspace_limit_mb == d.conv_workspace_limit_mb &&
         conv_capped_efficiency == d.conv_capped_efficiency &&
         fp32_unfused_update_kernels == d.fp32_unfused_update_kernels &&
         fp32_unfused_update_accesses == d.fp32_unfused_update_accesses &&
         recurrent_gate_gemms == d.recurrent_gate_gemms && serial_towers == d.serial_towers &&
         session_run == d.session_run && sequence_bin_tokens_by_length == d.sequence_bin_tokens_by_length && gemm_dims_padded_to == d.gemm_dims_padded_to &&
         fused_bn_activation_half == d.fused_bn_activation_half &&
         kernel_tf32_efficiency_scale == d.kernel_tf32_efficiency_scale &&
         fp32_matmul_strict == d.fp32_matmul_strict &&
         input_workers_per_device_by_system == d.input_workers_per_device_by_system;
}

int FrameworkSpec::workers_per_device_on(const std::string& system) const {
  const auto it = input_workers_per_device_by_system.find(system);
  return it != input_workers_per_device_by_system.end() ? it->second : input_workers_per_device;
}

}  // namespace xpusim
