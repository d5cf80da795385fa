// Runner: the OpVisitor that executes each op kind on real buffers. Handlers live in
// ops_dnnl.cpp (conv, matmul, batch norm, eltwise, pooling on oneDNN primitives) and
// ops_host.cpp (everything oneDNN has no primitive for: loss, LSTM, embedding, dropout,
// concat/split, optimizers). Per-op state (primitives and their memory objects) is built
// on the first execution of an op and reused on every later step.
#pragma once
#include <array>
#include <dnnl.hpp>

#include <memory>
#include <vector>

#include "devices/cpu/executor.hpp"
#include "devices/cpu/memory_plan.hpp"
#include "engine/op_visitor.hpp"

namespace xpusim::cpu {

struct OpState {
  virtual ~OpState() = default;
};

class Runner final : public OpVisitor<void> {
 public:
  Runner(const OpGraph& g, const ExecOptions& o);

#define XPUSIM_CPU_HANDLER(k, n) void on_##k(const OpGraph& g, int op) override;
  XPUSIM_OP_KINDS(XPUSIM_CPU_HANDLER)
#undef XPUSIM_CPU_HANDLER

  float* ptr(int t) { return ptrs[static_cast<size_t>(t)]; }
  // The buffers of an op's first N inputs (read-only) or outputs, in the order the op kind lists them.
  template <size_t N>
  std::array<const float*, N> inputs_of(const OpNode& op) {
    std::array<const float*, N> a{};
    for (size_t j = 0; j < N; ++j) a[j] = ptr(op.inputs[j]);
    return a;
  }
  template <size_t N>
  std::array<float*, N> outputs_of(const OpNode& op) {
    std::array<float*, N> a{};
    for (size_t j = 0; j < N; ++j) a[j] = ptr(op.outputs[j]);
    return a;
  }
  int64_t numel(int t) const { return g_.tensor(t).desc.numel(); }
  // The bf16 copy of a weight fed to conv/matmul under bf16 (else the weight itself).
  float* weight_operand(int op, int t);

  const OpGraph& g_;
  ExecOptions opts;
  bool bf16 = false;       // round bf16-typed tensors to bf16 after they are written
  bool bf16_native = false;  // conv, matmul, batch norm on oneDNN bf16 primitives
  bool avx512 = false;     // oneDNN's JIT kernels block channels by 16 (else by 8)
  // Per op: its first output is already bf16-exact when the op has run (a native bf16
  // primitive wrote it through a bf16 -> fp32 reorder), so the executor need not round it.
  std::vector<char> exact_bf16_out;
  // Per tensor: 0 plain fp32; else stored channel-blocked (aBcd16b under AVX-512, else
  // aBcd8b) in the compute type; 1 and 2 name why (choose_layouts in ops_dnnl.cpp). Chosen for
  // tensors that only convolution, batch norm and elementwise ops touch, so the reorders to
  // and from plain layout around those primitives disappear.
  std::vector<char> blocked;
  void choose_layouts();
  // Per tensor: the fp32 layout a conv weight, its gradient and optimizer state are stored
  // in (choose_weight_layouts, ops_dnnl.cpp), or a zero desc (plain). Never bf16: weights
  // stay fp32 masters.
  std::vector<dnnl::memory::desc> weight_layout;
  void choose_weight_layouts();
  // Stored in a layout other than plain (activations blocked, or a weight layout).
  bool stored_blocked(int t) const {
    return blocked[static_cast<size_t>(t)] || !weight_layout[static_cast<size_t>(t)].is_zero();
  }
  bool add_blocked(const OpGraph& g, int op);  // Add on blocked operands (ops_dnnl.cpp)
  // Stored as bf16 (2 bytes per element): blocked tensors on the native path.
  bool bf16_stored(int t) const { return bf16_native && blocked[static_cast<size_t>(t)]; }
  // How a tensor is stored, for kernels that take all operands in one storage (batch norm):
  // its channel block (1 = plain) and element type.
  struct Storage {
    int block = 1;
    bool bf16 = false;
    bool operator==(const Storage& o) const { return block == o.block && bf16 == o.bf16; }
    bool operator!=(const Storage& o) const { return !(*this == o); }
  };
  Storage storage_of(int t) const { return {layout_block(t), bf16_stored(t)}; }
  std::vector<float> read_plain(int t);  // a tensor's values in plain fp32 (any storage)
  void write_plain(int t, const std::vector<float>& values);  // the inverse of read_plain
  // Fusion (fusion.cpp), decided from graph patterns: what each op's handler
  // runs along with it. relu: a ReLU Activation applied to the result (a oneDNN eltwise
  // post-op for Conv2D and MatMul, in the kernel for batch norm); add: an Add of the batch
  // norm's output and one other tensor (before the ReLU); act_bwd: a ReLU
  // ActivationBackward whose result only this BatchNormBackward reads.
  struct Fusion {
    int relu = -1, add = -1, act_bwd = -1;
  };
  std::vector<Fusion> fusion;  // per op
  // Per op: the handler to run at this op's place in the schedule: itself, the head of its
  // fused group (at the group's last member, when every input of the group exists), or -1.
  std::vector<int> run_as;
  int fused_ops = 0;  // ops run inside another op's handler
  int split_ops = 0;  // backward-weights ops split over the minibatch (conv_split.hpp), once created
  std::vector<char> fused_away;  // per tensor: passed inside a fused group, never stored
  void plan_fusion(const std::vector<int>& order);
  // The execution steps (memory_plan.hpp) of `order` under the fusion plan.
  std::vector<PlanStep> plan_steps(const std::vector<int>& order) const;
  // What the handler of op h (run_as) reads and writes, tensors internal to its group excluded.
  PlanStep step_of(int h) const;
  // The tensor the op's handler writes in place of its first output (the last fused op's).
  int fused_out(int op) const;
  // Batch norm on bn_kernel.hpp (fp32) or bn_kernel_bf16.hpp (x stored bf16) rather than
  // oneDNN, operands passed in x's storage.
  bool bn_own_kernel_fwd(int bn) const;
  bool bn_own_kernel_bwd(int bn_bwd) const;
  int layout_block(int t) const { return blocked[static_cast<size_t>(t)] ? (avx512 ? 16 : 8) : 1; }
  int64_t peak_live_bytes = 0;  // the memory plan's lower bound
  bool training = true;    // dropout active
  uint64_t dropout_step = 0;
  int64_t adam_t = 0;      // Adam's step counter (bias correction)
  dnnl::engine eng;
  dnnl::stream strm;
  std::vector<float*> ptrs;
  std::vector<std::unique_ptr<float[], void (*)(float*)>> blocks;
  int64_t block_bytes = 0;
  std::vector<std::unique_ptr<OpState>> state;      // per op
  std::vector<std::vector<float>> weight_copies;    // per op: bf16-rounded weight
  int first_adam_op();  // Adam's step counter advances once per update phase
  // Scratch slot k with at least `bytes` (grown on demand; callers re-read the pointer).
  void* scratch(int k, size_t bytes);
  int64_t scratch_bytes() const;
 private:
  int first_adam_ = -2;
  std::vector<std::unique_ptr<float[], void (*)(float*)>> scratch_;
  std::vector<size_t> scratch_size_;
};

// Round-to-nearest-even to bf16 precision, in place (values stay in fp32 containers).
void round_to_bf16(float* p, int64_t n);

}  // namespace xpusim::cpu
