// The framework / runtime profile: the software stack a prediction runs under, the third axis
// next to device and system (configs/frameworks/*.yaml, docs/frameworks.md). A profile holds a
// few physically meaningful constants shared by every model: host overhead per step, the input
// pipeline (where decode and augmentation run, on how many threads, how they overlap the
// device), compile / graph-build time, the multi-device strategy, kernel efficiency relative to
// the stack the device constants were calibrated on, and memory overheads. The neutral profile
// (every default) is the calibration stack itself: tf_cnn_benchmarks on GPUs and CPUs,
// TPUEstimator on TPUs.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/spec_reader.hpp"
#include "models/dtype.hpp"

namespace xpusim {

// How input batches reach the device.
enum class InputMode {
  host_pipeline,  // a host pipeline (tf.data, Keras' generator loop) prefetches ahead of the device
  device_loader,  // decode and augmentation on the accelerator (NVIDIA DALI): no host bound
};

// How data-parallel replicas exchange gradients, as the framework does it.
enum class MultiDeviceStrategy {
  system,           // the system's collective: ring all-reduce or parameter server (tf_cnn_benchmarks, NCCL/DDP)
  gather_on_first,  // Keras multi_gpu_model: towers' gradients gathered on one device, weights sent back, not overlapped
};

struct FrameworkSpec {
  std::string name = "default";         // the profile's file stem; "default" = neutral
  std::string description;
  std::string file;
  std::string base;                     // the profile it starts from (framework_base.hpp); empty = none
  std::vector<std::string> names;       // names in the reference CSV's framework column that mean this stack
  std::vector<std::string> engines;     // engines it applies to (analytical, tpu_systemc)
  // Versions of the stack it is for (glob patterns, `*` = any run of characters; a reference
  // row's framework_version, e.g. "pytorch-ngc19.*"): among the profiles a name selects, one
  // whose pattern matches the row's version wins; profiles without versions take the rest.
  std::vector<std::string> versions;
  std::string source;

  // Host overheads (not overlapped with device work).
  double step_overhead_ms = 0;          // per training step: Python loop, callbacks, session.run / RPC
  double device_step_overhead_ms = 0;   // per step and per device beyond the first (host split / merge)
  // Host time to dispatch one op of the step graph (forward, backward and update ops): PyTorch
  // 1.x's eager Python + ATen dispatch per op, the graph executor's per-node scheduling of TF
  // 1.x, MXNet's dependency-engine push. Launches are asynchronous, so the dispatch runs ahead
  // of the device on one host thread: the step is the longer of the two, not their sum, and
  // the thread is busy for it (cpu_util_pct). 0 = the calibration stack (hidden in the device's
  // per-op overhead).
  double host_dispatch_us_per_op = 0;

  // Input pipeline.
  InputMode input_mode = InputMode::host_pipeline;
  int input_threads = 0;                // host threads decoding + augmenting (0 = every core of the system's host)
  // Worker processes per training process, one process per device (PyTorch's DataLoader
  // num_workers): the pipeline then has this x the devices a host feeds, capped at its cores.
  // 0 = input_threads decides.
  int input_workers_per_device = 0;
  double input_cost_scale = 1.0;        // per-sample host cost relative to the dataset's tf.data cost
  double device_decode_us_per_sample = 0;  // device_loader: accelerator time per sample (decode + augmentation)
  // The dataset's host cost per sample (host_preprocess_ms) that device_decode_us_per_sample is
  // stated for; set, a sample's device time scales with its dataset's host cost (a loader that
  // decodes JPEGs does next to nothing for a CIFAR-10 array or an NCF id pair). 0 = the same
  // device time for every sample.
  double device_decode_reference_ms = 0;

  // One-off cost before the first step (first_epoch_seconds).
  double compile_base_s = 0;            // graph build + session start / XLA compile, per job
  double compile_per_op_ms = 0;         // per op of the training-step graph (graph size)

  // Multi-device.
  MultiDeviceStrategy strategy = MultiDeviceStrategy::system;
  // The precision gradients cross the links in under mixed precision: `compute` exchanges them in
  // the 16-bit compute type (tf_cnn_benchmarks' compact_gradient_transfer, default on, casts them
  // to fp16 before the all-reduce; MXNet's fp16 parameters have fp16 gradients), `fp32` in the
  // master weights' fp32 (PyTorch AMP / DDP on fp32 parameters). No effect in fp32 or tf32.
  bool exchange_in_compute_precision = true;
  // The stack's collective library as a share of the system's link bandwidth, replacing the
  // device's `allreduce_efficiency` (fitted on the 2017 stacks: NCCL 1.x on the DGX-1 reaches
  // 0.15 of it). NCCL 2.x (2018 on: NGC containers, Horovod, DDP) drives every link of the
  // NVLink mesh or the PCIe tree with fused, pipelined rings and trees. 0 = the device's.
  double allreduce_efficiency = 0;
  // Gradient buckets: consecutive gradients exchanged in one collective of up to this many MiB
  // (PyTorch DDP's bucket_cap_mb, 25 by default), the optimizer step after the last bucket;
  // 0 = one collective per gradient tensor (parallel/step_composer.hpp).
  double allreduce_bucket_mb = 0;

  // "fp32" convolutions and matmuls run in TF32 on tensor cores where the device has them
  // (NGC PyTorch, TensorFlow >= 2.4, NVIDIA's TF 1.15 builds: on by default on Ampere+).
  bool fp32_as_tf32 = false;
  // ...but only the convolutions (fp32_math: tf32_convs): PyTorch >= 1.12 leaves
  // torch.backends.cudnn.allow_tf32 on and turns torch.backends.cuda.matmul.allow_tf32 off, so
  // its fp32 matmuls (and attention's batched GEMMs) run strict fp32 on the CUDA cores.
  bool fp32_matmul_strict = false;

  // TPUs: the stack keeps the model's tensors in fp32 in HBM even when the MXU multiplies in
  // bf16 (Keras 2.2 / TF 1.13 keras_to_tpu_model built fp32 models; the TPU rounds fp32 inputs
  // to bf16 inside the MXU, cloud.google.com/tpu/docs/bfloat16). Every HBM byte of a 16-bit
  // tensor then counts twice (sim/tpu/lowering.cpp).
  bool tpu_fp32_storage = false;
  // Activations stay NCHW (`conv_layout: nchw`; PyTorch before 1.5 has no channels-last
  // format): cuDNN's tensor-core convolutions transpose them to NHWC and back, two more
  // kernels per convolution (devices/analytical/conv_layout.hpp). false = no transposes
  // modelled beyond what the calibration stack's constants hold.
  bool nchw_activations = false;

  // Kernels relative to the calibration stack (1 = as calibrated).
  double compute_efficiency_scale = 1.0;  // CUDA-core / SIMD conv and GEMM kernels
  double tensor_efficiency_scale = 1.0;   // tensor-core kernels (layout, fused casts)
  double memory_efficiency_scale = 1.0;   // bandwidth-bound kernels (fused BN + activation, NHWC)
  double op_overhead_scale = 1.0;         // per-op dispatch/launch overhead (asynchronous launch hides it)
  // The same three for GPUs priced by the kernel model (docs/gpu_model.md), relative to its
  // per-generation constants, which are fitted on a different stack and path than the
  // roofline devices' (a scale fitted on V100 roofline rows overshoots on an A100: issue 29).
  // Kernel-model GPUs take these and never the roofline scales above.
  double kernel_compute_efficiency_scale = 1.0;
  double kernel_tensor_efficiency_scale = 1.0;
  double kernel_memory_efficiency_scale = 1.0;
  // The resulting efficiencies are capped at 1 (a device's peak).
  // Mixed precision: the input pipeline pads the image's channels to this count (DALI
  // crop_mirror_normalize pad_output: RGB -> 4 channels, the 4th zero), so the first
  // convolution runs on the tensor cores at the padded channel count. 0 = unpadded.
  int first_layer_input_channels_padded_to = 0;
  // The stack pads its models' GEMM feature dimensions (in practice the vocabulary of an LM
  // head: NVIDIA's BERT rounds 30,522 up to 30,528, Megatron-LM to a multiple of 128) to a
  // multiple of this many elements, so every operand keeps cuBLAS's 16-byte alignment. 0 = the
  // model's dimensions as stated: an odd one sends its GEMMs to unaligned kernels
  // (devices/analytical/gemm_alignment.hpp).
  int gemm_dims_padded_to = 0;

  // Memory (per device).
  double memory_overhead_fraction = 0;  // allocator slack and framework copies, as a share of tensor memory
  int extra_weight_copies = 0;          // full weight copies beyond the model's (e.g. gathering device)
  // Share of the device's memory the framework's pool keeps out of the tensors' reach (MXNet's
  // MXNET_GPU_MEM_POOL_RESERVE, 5 % by default, for cuDNN handles and kernel launches): held
  // on top of the tensors, so a step fits only in the rest.
  double memory_pool_reserve_fraction = 0;
  // Large-model training (parallel/llm_*.hpp, `xpusim plan`).
  bool flash_attention = false;         // fused attention: scores never stored, causal blocks skipped
  bool dropout = false;                 // the decoder recipe trains with dropout (masks saved)
  double tp_comm_overlap = 0;           // share of tensor-parallel collectives hidden under GEMMs (with SP)
  // What nvidia-smi shows as used, not what the step needs: TensorFlow 1.x's BFC allocator
  // takes nearly all of every visible GPU's memory at session start unless allow_growth is set
  // (0.95 of it: the rest is the CUDA context and the reserve). 0 = the tensors' footprint
  // (PyTorch's caching allocator, allow_growth). Reported only (gpu_mem_used_bytes); the
  // fits-in-memory check keeps using the footprint.
  double allocator_reserved_fraction = 0;
  // LSTM contractions h.U per timestep on CPUs with the thread-pool model (cpu_threads.hpp):
  // Keras 2.0's LSTM (implementation 0) makes one small dot per gate, 4, each of which Eigen
  // sizes its threads on; 1 = one fused h.U of all gates (cuDNN-style, TF's LSTMBlockCell).
  int recurrent_gate_gemms = 1;
  // cuDNN algorithm choice under the stack's workspace cap (kernel-model GPUs): MXNet 1.x's
  // Convolution takes `workspace` (1024 MB by default) as the most scratch its autotuner
  // (MXNET_CUDNN_AUTOTUNE_DEFAULT=1, "limited_workspace") may give an algorithm. A 3x3 or 5x5
  // stride-1 convolution whose fast algorithm (Winograd / FFT tiling: transformed input and
  // output tiles, devices/analytical/conv_workspace.hpp) needs more falls back to an implicit
  // GEMM that runs at conv_capped_efficiency of the unconstrained choice. 0 = the calibration
  // stack's choice (TensorFlow's autotuner, TF_CUDNN_WORKSPACE_LIMIT_IN_MB 4096, is inside the
  // architecture constants).
  double conv_workspace_limit_mb = 0;
  double conv_capped_efficiency = 1.0;
  // The optimizer step on the fp32 / TF32 path (no AMP): 0 = one fused kernel per parameter
  // tensor (apex FusedAdam / multi-tensor LAMB, the graph's AdamUpdate as counted); N = N
  // separate PyTorch tensor ops per parameter tensor (DeepLearningExamples' BertAdam, which
  // its BERT fine-tuning runs without --fp16), each a launch and a pass over its tensors,
  // fp32_unfused_update_accesses reads + writes per parameter element in all (each an element of
  // the optimizer state's dtype: 4 bytes for the fp32 moments every graph has today).
  int fp32_unfused_update_kernels = 0;
  int fp32_unfused_update_accesses = 0;
  // The same layout choice for the fp32 / TF32 runs (`conv_layout_fp32`, default conv_layout):
  // DeepLearningExamples' ConvNets launcher (configs.yml from NGC 20.12) sets channels-last for
  // AMP only, so its TF32 convolutions on Ampere's tensor cores still pay the NCHW transposes.
  // (fp32 on CUDA cores has NCHW kernels: no transposes either way.)
  bool nchw_activations_fp32 = false;
  // Whether a run at this precision keeps NCHW activations around tensor-core convolutions.
  bool nchw_activations_for(Precision p) const {
    return p == Precision::fp32 || p == Precision::tf32 ? nchw_activations_fp32 : nchw_activations;
  }
  // Data-parallel towers that take turns on their GPUs instead of running at once (Keras 2.2's
  // multi_gpu_model on TF 1.13 in the 2019 study: its two cards read ~60 % + 40 % load where one
  // card read ~100 %, and two cards at 128 images each took 2.28x one card's step at 128). Each
  // GPU waits while the other towers' forward and backward ops run: the step's device time
  // gains (replicas - 1) x one tower's forward + backward time, which is no kernel time for the
  // waiting GPU (gpu_util_pct_smi). false = the towers run concurrently.
  bool serial_towers = false;
  // Each step is one run of a graph session (TF 1.x session.run), whose per-step cost the
  // device file's step_overhead_ms holds (fitted on TF rows). false: a runtime without one,
  // such as xpusim's own CUDA backend (a C++ loop launching the step's kernels, one stream
  // sync), does not pay it; its per-kernel launch cost stays in the kernel prices.
  bool session_run = true;
  // Real data: for the listed sequence lengths, the loader groups token sequences into bins of
  // the mapped width and pads each batch to its longest sample (NVIDIA's LDDL in
  // DeepLearningExamples' BERT pre-training from NGC 21.11: phase 2, 512 tokens, in bins of 64;
  // phase 1's data is not binned). Where the model's dataset states its documents' and
  // sentences' lengths, steps run at the bins' mean padded length (predict/sequence_bins.hpp).
  // Lengths not listed: every batch padded to the model's sequence length.
  std::map<int64_t, int64_t> sequence_bin_tokens_by_length;
  // Mixed precision: the stack runs batch norm with its following ReLU (and a residual add
  // feeding that ReLU) as one fused kernel on 16-bit NHWC data (TensorFlow's grappler remapper
  // -> _FusedBatchNormEx, cuDNN's CUDNN_BATCHNORM_OPS_BN_ACTIVATION / _BN_ADD_ACTIVATION; the
  // backward likewise takes the ReLU's gradient inside the BN backward kernel). The ReLU and
  // the add then cost no kernel and no pass of their own (devices/analytical/bn_fusion.hpp).
  // false = separate kernels, as counted.
  bool fused_bn_activation_half = false;
  // Kernel-model GPUs: the stack's TF32 tensor-core kernels relative to its 16-bit ones (a
  // factor on kernel_tensor_efficiency_scale for TF32 runs only; NGC TF 20.06's cuDNN 8.0 was
  // the first release with TF32 kernels). 1 = the same share of their peak as 16-bit kernels.
  double kernel_tf32_efficiency_scale = 1.0;
  // DataLoader workers per device on named systems, where a launcher sets them per platform
  // (DeepLearningExamples' ConvNets configs.yml `platform:` table: 8 on a DGX-1, 16 on a DGX
  // A100); other systems take input_workers_per_device.
  std::map<std::string, int> input_workers_per_device_by_system;
  // The workers per device on this system (input_workers_per_device_by_system, else
  // input_workers_per_device; 0 = input_threads decides).
  int workers_per_device_on(const std::string& system) const;

  bool neutral() const { return name == "default"; }
  // A named profile whose every constant is at its neutral value (tf_cnn_benchmarks,
  // tpu_estimator, mxnet_18_03: nothing fitted, or the calibration stack itself). Predictions under
  // it say so (`framework_neutral`), so a user does not read a profile's name as a modelled stack.
  bool constants_neutral() const;
};

// Which engines a profile field applies to: the host pass (predict/host_pass.hpp) and the
// engines read a field only on these. A profile that lists an engine a field it sets does not
// apply to is an error naming the field's line (a TPU profile setting the GPU-only
// device_step_overhead_ms, say), so no profile field is silently ignored.
struct FrameworkFieldScope {
  const char* field;
  std::vector<std::string> engines;  // empty = every engine
};
const std::vector<FrameworkFieldScope>& framework_field_scopes();

// A profile file's YAML with the fields of its `base` added (framework_base.hpp), as the
// parser reads it: what calibration looks up its fittable constants in.
YAML::Node load_framework_yaml(const std::string& path);

// Parses one profile, with KEY=VALUE overrides applied first. Errors are UserError file:line: key.
FrameworkSpec load_framework_spec(const std::string& path, const std::vector<std::string>& overrides = {});

// The fields a profile declares, with unit, default (the neutral value) and description.
std::vector<FieldDoc> framework_spec_fields(const std::string& path);

// One profile of the config directory as `xpusim list frameworks` shows it: its file stem
// (what --framework takes first), the names a CSV or option may use for it, the engines and
// stack versions it applies to, and whether its constants are the calibration stack's.
struct FrameworkProfileInfo {
  std::string name, description, base;  // base: the profile it starts from (empty = none)
  std::vector<std::string> names, engines, versions;
  bool neutral = false;
};
// Every profile under configs/frameworks/, by file name. A profile that does not parse throws
// its file:line: key error, as any command naming it would.
std::vector<FrameworkProfileInfo> framework_profiles();

// The profile for a framework name (a profile's file stem or one of its `names`) on `engine`.
// Empty = the neutral default. FieldError("framework") when no profile matches, listing them.
// `version` (a reference row's framework version; empty = none) picks among the profiles the
// name selects: the first (by file name) whose `versions` match it, else the first with no
// `versions`, else the first. A profile's file stem selects that profile whatever the version.
std::string find_framework_file(const std::string& name, const std::string& engine, const std::string& version = "");

// The same profile, parsed: the one the name index parsed already (each profile file is
// parsed once per change of the config directory), or the file a path names. nullptr for the
// empty name (the neutral default).
std::shared_ptr<const FrameworkSpec> find_framework_profile(const std::string& name, const std::string& engine);

// FieldError("framework") unless `name` is an existing profile file or names a profile for
// some engine: for options applied to many rows, where a typo would otherwise only show as
// every row skipped.
void check_framework_name(const std::string& name);

}  // namespace xpusim
