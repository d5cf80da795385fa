#include "devices/cpu/executor.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include <unistd.h>

#include "common/error.hpp"
#include "devices/cpu/memory_plan.hpp"
#include "devices/cpu/runner.hpp"

namespace xpusim::cpu {

namespace {

void free_floats(float* p) { std::free(p); }

// One deterministic stream per tensor, independent of allocation order.
std::mt19937_64 tensor_rng(uint64_t seed, int tensor) {
  std::seed_seq s{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(tensor)};
  return std::mt19937_64(s);
}

// The first consumer of tensor t and the input slot it reads t from.
std::pair<int, int> first_consumer(const OpGraph& g, int t) {
  for (int i : g.consumers(t)) {
    const OpNode& op = g.op(i);
    for (size_t k = 0; k < op.inputs.size(); ++k)
      if (op.inputs[k] == t) return {i, static_cast<int>(k)};
  }
  return {-1, -1};
}

void fill_normal(float* p, int64_t n, double stddev, std::mt19937_64& rng) {
  std::normal_distribution<float> d(0.0f, static_cast<float>(stddev));
  for (int64_t i = 0; i < n; ++i) p[i] = d(rng);
}

void fill_uniform(float* p, int64_t n, double a, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> d(static_cast<float>(-a), static_cast<float>(a));
  for (int64_t i = 0; i < n; ++i) p[i] = d(rng);
}

// Weight initialisation by the layer that reads the weight: He normal for conv and dense
// (He et al. 2015, std = sqrt(2 / fan_in)), ones/zeros for batch/layer-norm scale/shift, zero
// biases, Keras defaults for LSTM (Glorot-like 1/sqrt(fan_in), forget-gate bias 1) and
// embeddings (uniform +-0.05).
void init_weight(const OpGraph& g, int t, float* p, uint64_t seed) {
  const Tensor& T = g.tensor(t);
  const int64_t n = T.desc.numel();
  auto rng = tensor_rng(seed, t);
  auto [op, slot] = first_consumer(g, t);
  if (op < 0) {
    std::memset(p, 0, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  const OpNode& c = g.op(op);
  const Shape& s = T.desc.shape;
  switch (c.kind) {
    case OpKind::Conv2D:
      if (slot == 1) fill_normal(p, n, std::sqrt(2.0 / static_cast<double>(s[1] * s[2] * s[3])), rng);
      else std::memset(p, 0, static_cast<size_t>(n) * sizeof(float));
      return;
    case OpKind::MatMul:
      if (slot == 1) fill_normal(p, n, std::sqrt(2.0 / static_cast<double>(s[0])), rng);
      else std::memset(p, 0, static_cast<size_t>(n) * sizeof(float));
      return;
    case OpKind::BatchNorm:
    case OpKind::LayerNorm:
      for (int64_t i = 0; i < n; ++i) p[i] = slot == 1 ? 1.0f : 0.0f;
      return;
    case OpKind::LSTM:
      if (slot == 3) {
        const int64_t h = c.attrs.hidden;
        for (int64_t i = 0; i < n; ++i) p[i] = (i >= h && i < 2 * h) ? 1.0f : 0.0f;
      } else {
        fill_uniform(p, n, 1.0 / std::sqrt(static_cast<double>(s[0])), rng);
      }
      return;
    case OpKind::Embedding:
      fill_uniform(p, n, 0.05, rng);
      return;
    default:
      fill_normal(p, n, 0.05, rng);
      return;
  }
}

bool is_forward(const OpNode& op) { return op.phase == Phase::forward; }
bool is_backward(const OpNode& op) { return op.phase == Phase::backward || op.phase == Phase::communication; }
bool is_update(const OpNode& op) { return op.phase == Phase::update; }

}  // namespace

bool cpu_has_native_bf16() {
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
}

const char* cpu_isa_name() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

Executor::Executor(const OpGraph& g, const ExecOptions& opts) : g_(g) {
  if (!g.is_training_step && g.task != Task::inference)
    throw InternalError("cpu executor needs a lowered training step or an inference graph");
  if (opts.threads < 0 || opts.threads > kMaxThreads)
    throw FieldError("threads", "must be in [0, " + std::to_string(kMaxThreads) + "], got " + std::to_string(opts.threads));
  threads_ = opts.threads > 0 ? opts.threads : omp_get_num_procs();
  // oneDNN (built on OpenMP in Debian) and our own loops share this setting.
  omp_set_num_threads(threads_);
  r_ = std::make_unique<Runner>(g, opts);
  order_ = g.schedule();
  r_->plan_fusion(order_);
  // Tensors stored blocked in bf16 (on the native path) take two bytes per element.
  std::vector<int64_t> floats(static_cast<size_t>(g.num_tensors()));
  for (int t = 0; t < g.num_tensors(); ++t) {
    const int64_t n = g.tensor(t).desc.numel();
    floats[static_cast<size_t>(t)] = r_->bf16_stored(t) ? (n + 1) / 2 : n;
  }
  const std::vector<PlanStep> steps = r_->plan_steps(order_);
  writes_.resize(static_cast<size_t>(g.num_ops()));
  for (int i = 0; i < g.num_ops(); ++i) {
    const int h = r_->run_as[static_cast<size_t>(i)];
    if (h >= 0) writes_[static_cast<size_t>(h)] = r_->step_of(h).writes;
  }
  MemoryPlan plan = plan_memory(g, opts.plan_memory, floats, &steps);
  r_->peak_live_bytes = plan.peak_live_floats * static_cast<int64_t>(sizeof(float));
  // Linux overcommits: a batch far beyond RAM would "allocate" and then be killed while
  // zeroing. Refuse up front what cannot fit in physical memory.
  const size_t bytes = static_cast<size_t>(std::max<int64_t>(1, plan.arena_floats)) * sizeof(float);
  {
    const long double have = static_cast<long double>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
    if (have > 0 && static_cast<long double>(bytes) > have)
      throw UnavailableError("cpu: the step needs " + std::to_string(static_cast<double>(bytes) / 1e9) +
                             " GB of buffers, more than this machine's " + std::to_string(static_cast<double>(have) / 1e9) +
                             " GB of memory (lower the batch)");
  }
  // One arena; the plan's offsets are 64-byte aligned.
  float* arena = static_cast<float*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
  if (!arena) throw UnavailableError("cpu: out of memory allocating " + std::to_string(bytes) + " bytes");
  std::memset(arena, 0, bytes);
  r_->blocks.emplace_back(arena, &free_floats);
  r_->block_bytes = static_cast<int64_t>(bytes);
  r_->ptrs.resize(static_cast<size_t>(g.num_tensors()));
  for (int t = 0; t < g.num_tensors(); ++t) {
    const int64_t off = plan.offset[static_cast<size_t>(t)];
    r_->ptrs[static_cast<size_t>(t)] = off >= 0 ? arena + off : nullptr;  // null: fused away, never stored
  }
  for (int t = 0; t < g.num_tensors(); ++t) {
    const Tensor& T = g.tensor(t);
    if (T.role == TensorRole::weight && !r_->stored_blocked(t)) init_weight(g, t, data(t), opts.seed);
    if (T.role == TensorRole::weight && r_->stored_blocked(t)) {  // the same values, in its layout
      std::vector<float> plain(static_cast<size_t>(T.desc.numel()));
      init_weight(g, t, plain.data(), opts.seed);
      r_->write_plain(t, plain);
    }
    if (T.role == TensorRole::loss && loss_tensor_ < 0) loss_tensor_ = t;
  }
  for (int i = 0; i < g.num_ops(); ++i)
    if (g.op(i).kind == OpKind::SoftmaxCrossEntropy && probs_tensor_ < 0) probs_tensor_ = g.op(i).outputs[1];
}

Executor::~Executor() = default;

bool Executor::bf16() const { return r_->bf16; }
bool Executor::bf16_native() const { return r_->bf16_native; }
float* Executor::data(int t) { return r_->ptr(t); }
const float* Executor::data(int t) const { return r_->ptrs[static_cast<size_t>(t)]; }
std::vector<float> Executor::read(int t) const {
  if (!materialized(t)) throw InternalError("cpu: tensor " + g_.tensor(t).name + " is passed inside a fused op and never stored");
  return r_->read_plain(t);
}
void Executor::write(int t, const std::vector<float>& plain) { r_->write_plain(t, plain); }
std::vector<int> Executor::persistent_tensors() const {
  std::vector<int> out;
  for (TensorRole role : {TensorRole::weight, TensorRole::optimizer_state})
    for (int t = 0; t < g_.num_tensors(); ++t)
      if (g_.tensor(t).role == role && !g_.tensor(t).is_view) out.push_back(t);
  return out;
}
uint64_t Executor::dropout_step() const { return r_->dropout_step; }
void Executor::set_dropout_step(uint64_t step) { r_->dropout_step = step; }
int64_t Executor::adam_step() const { return r_->adam_t; }
void Executor::set_adam_step(int64_t t) { r_->adam_t = t; }
bool Executor::stored_blocked(int t) const { return r_->stored_blocked(t); }
float Executor::loss() const { return loss_tensor_ >= 0 ? *data(loss_tensor_) : 0.0f; }
int64_t Executor::buffer_bytes() const { return r_->block_bytes + r_->scratch_bytes(); }
int64_t Executor::peak_live_bytes() const { return r_->peak_live_bytes; }
int Executor::fused_ops() const { return r_->fused_ops; }
int Executor::split_ops() const { return r_->split_ops; }
bool Executor::materialized(int t) const { return !r_->fused_away[static_cast<size_t>(t)] && r_->ptrs[static_cast<size_t>(t)]; }
void Executor::set_lr(float lr) { r_->opts.lr = lr; }

void Executor::fill_synthetic() {
  for (int i = 0; i < g_.num_ops(); ++i) {
    const OpNode& op = g_.op(i);
    if (op.kind != OpKind::Input) continue;
    for (int t : op.outputs) {
      const Tensor& T = g_.tensor(t);
      auto rng = tensor_rng(r_->opts.seed ^ 0x5eed, t);
      float* p = data(t);
      const int64_t n = T.desc.numel();
      // Integer tensors: the range comes from the op that reads them.
      int64_t range = 0;
      for (int c : g_.consumers(t)) {
        const OpNode& co = g_.op(c);
        if (co.kind == OpKind::Embedding && co.inputs[0] == t) range = g_.tensor(co.inputs[1]).desc.shape[0];
        if (co.kind == OpKind::SoftmaxCrossEntropy && co.inputs[1] == t)
          range = std::max<int64_t>(2, g_.tensor(co.inputs[0]).desc.shape.back());
      }
      if (T.desc.dtype == DType::int32) {
        std::uniform_int_distribution<int64_t> d(0, std::max<int64_t>(1, range) - 1);
        for (int64_t k = 0; k < n; ++k) p[k] = static_cast<float>(d(rng));
      } else {
        fill_normal(p, n, 1.0, rng);
        if (r_->bf16) round_to_bf16(p, n);
      }
    }
  }
}

void Executor::run_phase(bool (*select)(const OpNode&)) {
  for (int at : order_) {
    if (!select(g_.op(at))) continue;
    const int i = r_->run_as[static_cast<size_t>(at)];  // fused groups run at their last member
    if (i < 0) continue;
    const OpNode& op = g_.op(i);
    auto t0 = std::chrono::steady_clock::now();
    r_->visit(g_, i);
    // Under bf16, what the step stored is rounded (a fused group's intermediates never are).
    if (r_->bf16)
      for (int t : writes_[static_cast<size_t>(i)]) {
        if (t == r_->fused_out(i) && r_->exact_bf16_out[static_cast<size_t>(i)]) continue;
        if (r_->bf16_stored(t)) continue;  // bf16 already
        const Tensor& T = g_.tensor(t);
        if (T.desc.dtype == DType::bf16 && !T.is_view) round_to_bf16(data(t), T.desc.numel());
      }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    seconds_[static_cast<size_t>(op.kind)] += s;
    if (op.kind == OpKind::Conv2D || op.kind == OpKind::Conv2DBackwardData ||
        op.kind == OpKind::Conv2DBackwardFilter || op.kind == OpKind::MatMul)
      flops_ += op.work.flops;
  }
}

void Executor::forward(bool training) {
  r_->training = training;
  run_phase(is_forward);
  r_->training = true;
}
void Executor::backward() { run_phase(is_backward); }
void Executor::update() { run_phase(is_update); }

void Executor::step() {
  forward(true);
  backward();
  update();
  ++r_->dropout_step;
}

const std::array<double, kNumOpKinds>& Executor::seconds_by_kind() const { return seconds_; }
double Executor::conv_matmul_flops() const { return flops_; }
void Executor::reset_timers() {
  seconds_.fill(0.0);
  flops_ = 0;
}

}  // namespace xpusim::cpu
