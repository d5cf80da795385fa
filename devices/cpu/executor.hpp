// Executor: runs a lowered training-step OpGraph for real on this CPU (oneDNN + Eigen).
// It owns one arena holding every tensor (tensors with disjoint lifetimes share bytes, see
// memory_plan.hpp; tensors passed inside a fused op group have none, see fusion.cpp), initialises weights from a seed, and runs forward, backward and
// optimizer update with per-op-kind wall-clock timing. Integer tensors (token ids, labels)
// and dropout masks are stored as exact small integers in fp32 buffers.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/graph.hpp"

namespace xpusim::cpu {

// Whether oneDNN runs bf16 convolution and matmul natively on this CPU (its ISA detection:
// avx512_core_bf16 or avx512_core_amx), and the ISA's name as oneDNN reports it.
bool cpu_has_native_bf16();
const char* cpu_isa_name();

// How a bf16 graph runs. native: conv, matmul and batch norm run as oneDNN bf16 primitives
// (bf16 operands, fp32 accumulation), which oneDNN 2.6 provides only on CPUs with
// avx512_core_bf16 or AMX; emulated: fp32 primitives on bf16-rounded operands (any CPU).
// auto picks native where the CPU has it.
enum class Bf16Path { automatic, native, emulated };

// More OpenMP threads than this is a typo, not a machine: libgomp crashes creating 100000
// threads. 1024 is above the hardware threads of any current two-socket server.
constexpr int kMaxThreads = 1024;

struct ExecOptions {
  uint64_t seed = 1;
  int threads = 0;          // 0 = all cores (omp_get_num_procs)
  bool plan_memory = true;  // share buffers between tensors whose lifetimes do not overlap
  Bf16Path bf16_path = Bf16Path::automatic;  // only read for bf16 graphs
  // Keep tensors that only conv, batch norm and elementwise ops touch channel-blocked
  // (Runner::blocked), and conv weights with their gradients and optimizer state in the
  // layout the convolutions use (Runner::weight_layout); false stores every tensor plain
  // (the reference layout in tests).
  bool blocked_layouts = true;
  // Fuse what the op graph allows (Runner::Fusion): conv/matmul + ReLU,
  // batch norm [+ add] [+ ReLU], ReLU backward + batch-norm backward. Tensors passed inside
  // a fused group are never stored (read() refuses them); false runs every op (tests).
  bool fuse_ops = true;
  // Batch norm on bn_kernel.hpp / bn_kernel_bf16.hpp (no spinning barriers; needed by the
  // batch-norm fusions); false: oneDNN's primitive (tests compare).
  bool own_batch_norm = true;
  // Native bf16: convolution backward-weights split over the minibatch, one single-threaded
  // primitive per thread (conv_split.hpp), where it applies; false: oneDNN's threading (tests).
  bool split_bwd_weights = true;
  // Optimizer hyperparameters; the graph carries none (PyTorch conventions, see update ops).
  float lr = 0.01f;
  float momentum = 0.9f;
  float weight_decay = 0.0f;
  float adam_beta1 = 0.9f, adam_beta2 = 0.999f, adam_eps = 1e-8f;
};

class Runner;  // the OpVisitor that executes ops (runner.hpp)

class Executor {
 public:
  Executor(const OpGraph& g, const ExecOptions& opts);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Fills inputs with synthetic data (normal images, uniform ids and labels) from the seed.
  void fill_synthetic();
  // training=false: dropout is the identity (batch norm still uses batch statistics).
  void forward(bool training = true);
  void backward();  // backward and communication phases
  void update();    // optimizer phase
  void step();      // forward(true) + backward + update; advances the dropout stream

  // The tensor's storage: plain fp32 unless stored_blocked (channel-blocked activations,
  // Runner::blocked; conv weights, gradients and optimizer state in a blocked fp32 layout,
  // Runner::weight_layout); read() always returns plain fp32 values.
  float* data(int tensor);
  const float* data(int tensor) const;
  std::vector<float> read(int tensor) const;
  bool stored_blocked(int tensor) const;
  void write(int tensor, const std::vector<float>& plain);  // the inverse of read()

  // What a training run carries from one step to the next, for checkpoints: the weights and
  // optimizer state (momentum, Adam moments) by tensor, and the two counters below. The
  // dropout masks are counter-based on dropout_step (see ops_host.cpp), so restoring these
  // makes the next step the same as in an uninterrupted run.
  std::vector<int> persistent_tensors() const;  // weights, then optimizer state, in tensor order
  uint64_t dropout_step() const;
  void set_dropout_step(uint64_t step);
  int64_t adam_step() const;  // Adam's step counter (bias correction)
  void set_adam_step(int64_t t);
  float loss() const;         // value of the (first) loss tensor
  int loss_tensor() const { return loss_tensor_; }
  int probs_tensor() const { return probs_tensor_; }  // softmax output of the loss op
  int threads() const { return threads_; }
  bool bf16() const;
  bool bf16_native() const;  // bf16 graph running on native bf16 primitives
  int64_t buffer_bytes() const;  // bytes of all tensor storage
  int64_t peak_live_bytes() const;  // most tensor bytes live in one step (the plan's lower bound)
  int fused_ops() const;         // ops that run inside another op's handler
  int split_ops() const;         // backward-weights ops split over the minibatch (after a step)
  bool materialized(int t) const;  // false: passed inside a fused op, never stored (read() throws)
  void set_lr(float lr);

  // Seconds spent per op kind since the last reset (summed over steps), and FLOPs of the
  // conv/matmul ops run in that time (work counted on the graph, not recounted here).
  const std::array<double, kNumOpKinds>& seconds_by_kind() const;
  double conv_matmul_flops() const;
  void reset_timers();

 private:
  void run_phase(bool (*select)(const OpNode&));
  const OpGraph& g_;
  std::unique_ptr<Runner> r_;
  int loss_tensor_ = -1, probs_tensor_ = -1;
  int threads_ = 1;
  std::array<double, kNumOpKinds> seconds_{};
  double flops_ = 0;
  std::vector<int> order_;  // the graph's schedule, computed once
  std::vector<std::vector<int>> writes_;  // per handler op: the tensors its step stores
};

}  // namespace xpusim::cpu
