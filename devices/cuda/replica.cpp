// Replica lifecycle: device handles, the tensor plan (lifetimes, views, persistent state),
// weight initialisation and synthetic data, steps, and host transfers. The op handlers live
// in replica_ops.cpp and replica_lstm.cpp.
#include "devices/cuda/replica.hpp"

#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <cstring>
#include <sstream>

#include "common/error.hpp"
#include "devices/cuda/cuda_check.hpp"
#include "devices/cuda/kernels.cuh"
#include "devices/cuda/step_order.hpp"

namespace xpusim::cuda {

namespace {

std::string gib(int64_t b) {
  std::ostringstream os;
  os.precision(3);
  os << static_cast<double>(b) / (1024.0 * 1024.0 * 1024.0) << " GiB";
  return os.str();
}

GemmMath gemm_math(Precision p) {
  switch (p) {
    case Precision::fp32: return GemmMath::fp32;
    case Precision::tf32: return GemmMath::tf32;
    default: return GemmMath::tensor;
  }
}

}  // namespace

Replica::Replica(const OpGraph& g, ReplicaOptions o) : g_(g), o_(o), precision_(g.precision) {
  XPUSIM_CUDA(cudaSetDevice(o_.device));
  XPUSIM_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  XPUSIM_CUDA(cudaStreamCreateWithFlags(&comm_stream_, cudaStreamNonBlocking));
  XPUSIM_CUDA(cudnnCreate(&cudnn_));
  XPUSIM_CUDA(cudnnSetStream(cudnn_, stream_));
  XPUSIM_CUDA(cublasCreate(&cublas_));
  XPUSIM_CUDA(cublasSetStream(cublas_, stream_));
  XPUSIM_CUDA(cudaEventCreate(&step_start_));
  XPUSIM_CUDA(cudaEventCreate(&step_end_));
  math_ = gemm_math(precision_);
  const int dev = o_.device;
  pool_ = std::make_unique<CachingPool>(
      [dev](size_t n) -> void* {
        void* p = nullptr;
        cudaSetDevice(dev);
        if (cudaMalloc(&p, n) != cudaSuccess) {
          cudaGetLastError();  // clear the sticky-free allocation error
          return nullptr;
        }
        return p;
      },
      [dev](void* p) {
        cudaSetDevice(dev);
        cudaFree(p);
      },
      [dev](size_t asked, const PoolStats& s) {
        size_t free_b = 0, total_b = 0;
        cudaSetDevice(dev);
        cudaMemGetInfo(&free_b, &total_b);
        throw UnavailableError("out of GPU memory on GPU " + std::to_string(dev) + ": asked " +
                               std::to_string(asked) + " bytes, " + std::to_string(free_b) + " bytes free of " +
                               std::to_string(total_b) + " (" + gib(static_cast<int64_t>(total_b)) + "); xpusim holds " +
                               std::to_string(s.reserved_bytes) + " bytes; try a smaller batch");
      });
  // cuBLAS's workspace from the pool (32 MiB, NVIDIA's recommendation for Hopper), so that
  // cuBLAS makes no allocations of its own during the steps.
  constexpr size_t kCublasWorkspace = size_t{32} << 20;
  XPUSIM_CUDA(cublasSetWorkspace(cublas_, pool_->allocate(kCublasWorkspace), kCublasWorkspace));
  XPUSIM_CUDA(cudaMalloc(&found_inf_, sizeof(int)));
  XPUSIM_CUDA(cudaMallocHost(&loss_host_, sizeof(float)));
  XPUSIM_CUDA(cudaMallocHost(&found_inf_host_, sizeof(int)));
  plan();
  check_fits();
  init_persistent();
}

// The tensors' own bytes at the step's peak, from the lifetimes plan() found (as run_op and
// release_dead allocate and free them): a lower bound on what the step needs, since cuDNN and
// cuBLAS workspaces and the pool's rounding come on top. Past what the GPU has free, the step
// cannot run: say so before allocating tens of GB (and before a tensor too large for cuDNN's
// 32-bit descriptors turns the same condition into a library error).
int64_t Replica::planned_peak_bytes() const {
  const int nt = g_.num_tensors();
  auto bytes = [&](int t) { return g_.tensor(t).desc.bytes(); };
  int64_t live = 0;
  for (int t = 0; t < nt; ++t)
    if (persistent_[static_cast<size_t>(t)] && root_[static_cast<size_t>(t)] == t) live += bytes(t);
  int64_t peak = live;
  std::vector<char> held(static_cast<size_t>(nt), 0);
  for (int op : step_order(g_)) {
    const OpNode& n = g_.op(op);
    const int p = pos_[static_cast<size_t>(op)];
    if (n.kind != OpKind::Reshape)
      for (int t : n.outputs) {
        int r = root_[static_cast<size_t>(t)];
        if (persistent_[static_cast<size_t>(r)] || held[static_cast<size_t>(r)]) continue;
        held[static_cast<size_t>(r)] = 1;
        live += bytes(r);
      }
    peak = std::max(peak, live);
    if (o_.keep_step_tensors) continue;
    auto consider = [&](int t) {
      int r = root_[static_cast<size_t>(t)];
      if (!held[static_cast<size_t>(r)] || last_use_[static_cast<size_t>(r)] != p) return;
      TensorRole role = g_.tensor(r).role;
      if (role == TensorRole::weight_grad || role == TensorRole::loss) return;  // freed at step end
      held[static_cast<size_t>(r)] = 0;
      live -= bytes(r);
    };
    for (int t : n.inputs) consider(t);
    for (int t : n.outputs) consider(t);
  }
  return peak;
}

void Replica::check_fits() {
  const int64_t need = planned_peak_bytes();
  size_t free_b = 0, total_b = 0;
  XPUSIM_CUDA(cudaMemGetInfo(&free_b, &total_b));
  if (need <= static_cast<int64_t>(free_b)) return;
  throw UnavailableError("out of GPU memory on GPU " + std::to_string(o_.device) + ": the step's tensors need at least " +
                         std::to_string(need) + " bytes at their peak (" + gib(need) + "), " + std::to_string(free_b) +
                         " bytes free of " + std::to_string(total_b) + " (" + gib(static_cast<int64_t>(total_b)) +
                         "); try a smaller batch");
}

Replica::~Replica() {
  cudaSetDevice(o_.device);
  cudaStreamSynchronize(stream_);
  cudaStreamSynchronize(comm_stream_);
  for (auto& [op, e] : comm_done_) cudaEventDestroy(e);
  for (auto& [a, b] : op_events_) {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  // Handles first: cuBLAS's workspace belongs to the pool.
  cublasDestroy(cublas_);
  cudnnDestroy(cudnn_);
  pool_.reset();  // frees every block, tensors included
  for (auto& [op, mv] : bn_running_) {
    cudaFree(mv.first);
    cudaFree(mv.second);
  }
  cudaFree(found_inf_);
  cudaFreeHost(loss_host_);
  cudaFreeHost(found_inf_host_);
  cudaEventDestroy(step_start_);
  cudaEventDestroy(step_end_);
  cudaStreamDestroy(comm_stream_);
  cudaStreamDestroy(stream_);
}

// Lifetimes: a step tensor is allocated when its producer runs and released after the last
// op that reads it (or a view of it); weight gradients live to the end of the step because
// the NCCL stream may still read them.
void Replica::plan() {
  const int nt = g_.num_tensors();
  ptr_.assign(static_cast<size_t>(nt), nullptr);
  root_.resize(static_cast<size_t>(nt));
  for (int t = 0; t < nt; ++t) root_[static_cast<size_t>(t)] = t;
  last_use_.assign(static_cast<size_t>(nt), -1);
  persistent_.assign(static_cast<size_t>(nt), false);
  pos_.assign(static_cast<size_t>(g_.num_ops()), -1);
  std::vector<int> sched = step_order(g_);
  for (size_t i = 0; i < sched.size(); ++i) pos_[static_cast<size_t>(sched[i])] = static_cast<int>(i);
  for (int op : sched) {
    const OpNode& n = g_.op(op);
    if (n.kind == OpKind::Reshape) root_[static_cast<size_t>(n.outputs[0])] = root_[static_cast<size_t>(n.inputs[0])];
    if (n.kind == OpKind::SGDMomentumUpdate || n.kind == OpKind::AdamUpdate) update_grads_.push_back(n.inputs[1]);
  }
  for (int op : sched) {
    const OpNode& n = g_.op(op);
    int p = pos_[static_cast<size_t>(op)];
    for (int t : n.inputs) last_use_[static_cast<size_t>(root_[static_cast<size_t>(t)])] = p;
    for (int t : n.outputs) {
      int r = root_[static_cast<size_t>(t)];
      last_use_[static_cast<size_t>(r)] = std::max(last_use_[static_cast<size_t>(r)], p);
    }
  }
  for (int t = 0; t < nt; ++t) {
    TensorRole r = g_.tensor(t).role;
    persistent_[static_cast<size_t>(t)] = r == TensorRole::weight || r == TensorRole::optimizer_state ||
                                          r == TensorRole::input || r == TensorRole::label;
    if (r == TensorRole::loss) loss_tensor_ = t;
  }
}

// Weights: He-uniform, U(-sqrt(6/fan_in), +sqrt(6/fan_in)) (He et al., ICCV 2015) for conv,
// dense and LSTM kernels; U(-0.05, 0.05) for embedding tables (Keras' default); BatchNorm
// gamma 1; biases and beta 0. The same seed on every replica: data parallel starts equal.
// Data: one synthetic batch kept on the device (tf_cnn_benchmarks' synthetic mode),
// images U(-1, 1), labels and token ids uniform over their range, seeded per replica.
void Replica::init_persistent() {
  std::map<int, std::pair<OpKind, int>> used_as;  // tensor -> (consumer kind, input slot), first consumer
  std::map<int, int64_t> id_range;
  for (int op = 0; op < g_.num_ops(); ++op) {
    const OpNode& n = g_.op(op);
    for (size_t i = 0; i < n.inputs.size(); ++i) used_as.emplace(n.inputs[i], std::make_pair(n.kind, int(i)));
    if (n.kind == OpKind::Embedding) id_range[n.inputs[0]] = g_.tensor(n.inputs[1]).desc.shape[0];
    if (n.kind == OpKind::SoftmaxCrossEntropy) {
      int64_t classes = g_.tensor(n.inputs[0]).desc.shape.back();
      id_range[n.inputs[1]] = classes == 1 ? 2 : classes;
    }
  }
  std::mt19937_64 wrng(o_.seed);
  std::mt19937_64 drng(o_.seed * 1000003ull + static_cast<uint64_t>(o_.replica) + 1);
  for (int t = 0; t < g_.num_tensors(); ++t) {
    if (!persistent_[static_cast<size_t>(t)]) continue;
    const Tensor& T = g_.tensor(t);
    std::vector<float> v(static_cast<size_t>(T.desc.numel()), 0.f);
    auto use = used_as.find(t);
    if (T.role == TensorRole::weight) {
      const Shape& s = T.desc.shape;
      if (use != used_as.end() && use->second.first == OpKind::Embedding) {
        std::uniform_real_distribution<float> u(-0.05f, 0.05f);
        for (auto& x : v) x = u(wrng);
      } else if (s.size() >= 2) {
        // conv [K, C/g, kh, kw]: fan_in = C/g kh kw; dense and LSTM [in, out]: fan_in = in.
        double fan_in = s.size() == 4 ? static_cast<double>(T.desc.numel() / s[0]) : static_cast<double>(s[0]);
        float a = static_cast<float>(std::sqrt(6.0 / std::max(1.0, fan_in)));
        std::uniform_real_distribution<float> u(-a, a);
        for (auto& x : v) x = u(wrng);
      } else if (use != used_as.end() && (use->second.first == OpKind::BatchNorm || use->second.first == OpKind::LayerNorm) &&
                 use->second.second == 1) {  // normalisation scale (gamma) starts at 1
        std::fill(v.begin(), v.end(), 1.f);
      }
    } else if (T.role == TensorRole::input || T.role == TensorRole::label) {
      if (T.desc.dtype == DType::int32) {
        auto r = id_range.find(t);
        int64_t hi = r == id_range.end() ? 1 : r->second;
        std::uniform_int_distribution<int64_t> u(0, std::max<int64_t>(0, hi - 1));
        for (auto& x : v) x = static_cast<float>(u(drng));
      } else {
        std::uniform_real_distribution<float> u(-1.f, 1.f);
        for (auto& x : v) x = u(drng);
      }
    }
    alloc_tensor(t);
    upload(t, v);  // optimizer state starts at zero
  }
  // Running statistics of BatchNorm (used only by inference, kept for fidelity of the work).
  for (int op = 0; op < g_.num_ops(); ++op) {
    if (g_.op(op).kind != OpKind::BatchNorm) continue;
    int64_t c = g_.tensor(g_.op(op).inputs[1]).desc.numel();
    float *m = nullptr, *var = nullptr;
    XPUSIM_CUDA(cudaMalloc(&m, static_cast<size_t>(c) * sizeof(float)));
    XPUSIM_CUDA(cudaMalloc(&var, static_cast<size_t>(c) * sizeof(float)));
    XPUSIM_CUDA(cudaMemset(m, 0, static_cast<size_t>(c) * sizeof(float)));
    std::vector<float> ones(static_cast<size_t>(c), 1.f);
    XPUSIM_CUDA(cudaMemcpy(var, ones.data(), ones.size() * sizeof(float), cudaMemcpyHostToDevice));
    bn_running_[op] = {m, var};
  }
}

void* Replica::alloc_tensor(int t) {
  int r = root_[static_cast<size_t>(t)];
  if (!ptr_[static_cast<size_t>(r)])
    ptr_[static_cast<size_t>(r)] = pool_->allocate(static_cast<size_t>(g_.tensor(r).desc.bytes()));
  ptr_[static_cast<size_t>(t)] = ptr_[static_cast<size_t>(r)];
  return ptr_[static_cast<size_t>(t)];
}

bool Replica::has_buffer(int t) const { return ptr_.at(static_cast<size_t>(t)) != nullptr; }
void Replica::ensure_buffer(int t) { alloc_tensor(t); }

void* Replica::P(int t) const {
  void* p = ptr_.at(static_cast<size_t>(t));
  if (!p) throw InternalError("cuda: tensor '" + g_.tensor(t).name + "' has no buffer (read before written)");
  return p;
}

const void* Replica::weight_as(int t, DType dt) {
  if (dt == DType::fp32 || g_.tensor(t).desc.dtype != DType::fp32) return P(t);
  auto it = low_copy_.find(t);
  if (it == low_copy_.end())
    it = low_copy_.emplace(t, pool_->allocate(static_cast<size_t>(numel(t) * dtype_bytes(dt)))).first;
  // The master changes only in the update ops at the end of a step: one cast per step.
  if (low_copy_step_[t] != step_ + 1) {
    k_cast(P(t), DType::fp32, it->second, dt, numel(t), stream_);
    low_copy_step_[t] = step_ + 1;
  }
  return it->second;
}

void Replica::begin_step(float loss_scale, bool profile_ops) {
  XPUSIM_CUDA(cudaSetDevice(o_.device));
  loss_scale_ = loss_scale;
  unscaled_ = false;
  profile_ = profile_ops;
  op_event_ops_.clear();
  op_times_ms_.clear();
  XPUSIM_CUDA(cudaMemsetAsync(found_inf_, 0, sizeof(int), stream_));
  XPUSIM_CUDA(cudaEventRecord(step_start_, stream_));
}

void Replica::run_op(int op) {
  // Several replicas share this host thread: make this GPU current before any launch.
  XPUSIM_CUDA(cudaSetDevice(o_.device));
  const OpNode& n = g_.op(op);
  for (int t : n.outputs)
    if (!ptr_[static_cast<size_t>(t)] && !(n.kind == OpKind::Reshape)) alloc_tensor(t);
  if (n.kind == OpKind::Reshape) ptr_[static_cast<size_t>(n.outputs[0])] = P(n.inputs[0]);
  nvtxRangePushA(n.name.c_str());
  if (profile_) {
    size_t k = op_event_ops_.size();
    while (op_events_.size() <= k) {
      cudaEvent_t a, b;
      XPUSIM_CUDA(cudaEventCreate(&a));
      XPUSIM_CUDA(cudaEventCreate(&b));
      op_events_.emplace_back(a, b);
    }
    XPUSIM_CUDA(cudaEventRecord(op_events_[k].first, stream_));
    visit(g_, op);
    XPUSIM_CUDA(cudaEventRecord(op_events_[k].second, stream_));
    op_event_ops_.push_back(op);
  } else {
    visit(g_, op);
  }
  nvtxRangePop();
  release_dead(op);
}

void Replica::release_dead(int op) {
  if (o_.keep_step_tensors) return;
  const OpNode& n = g_.op(op);
  int p = pos_[static_cast<size_t>(op)];
  auto consider = [&](int t) {
    int r = root_[static_cast<size_t>(t)];
    if (persistent_[static_cast<size_t>(r)] || !ptr_[static_cast<size_t>(r)]) return;
    TensorRole role = g_.tensor(r).role;
    if (role == TensorRole::weight_grad || role == TensorRole::loss) return;  // freed at step end
    if (last_use_[static_cast<size_t>(r)] != p) return;
    pool_->release(ptr_[static_cast<size_t>(r)]);
    ptr_[static_cast<size_t>(r)] = nullptr;
  };
  for (int t : n.inputs) consider(t);
  for (int t : n.outputs) consider(t);
}

void Replica::release_step_tensors() {
  for (int t = 0; t < g_.num_tensors(); ++t) {
    if (persistent_[static_cast<size_t>(t)]) continue;
    if (root_[static_cast<size_t>(t)] == t && ptr_[static_cast<size_t>(t)]) pool_->release(ptr_[static_cast<size_t>(t)]);
  }
  for (int t = 0; t < g_.num_tensors(); ++t)
    if (!persistent_[static_cast<size_t>(t)]) ptr_[static_cast<size_t>(t)] = nullptr;
}

bool Replica::end_step() {
  XPUSIM_CUDA(cudaSetDevice(o_.device));
  // Join the NCCL stream so the step's time covers communication that outlasts backward.
  cudaEvent_t joined;
  XPUSIM_CUDA(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming));
  XPUSIM_CUDA(cudaEventRecord(joined, comm_stream_));
  XPUSIM_CUDA(cudaStreamWaitEvent(stream_, joined, 0));
  XPUSIM_CUDA(cudaEventRecord(step_end_, stream_));
  if (loss_tensor_ >= 0 && ptr_[static_cast<size_t>(loss_tensor_)])
    XPUSIM_CUDA(cudaMemcpyAsync(loss_host_, P(loss_tensor_), sizeof(float), cudaMemcpyDeviceToHost, stream_));
  XPUSIM_CUDA(cudaMemcpyAsync(found_inf_host_, found_inf_, sizeof(int), cudaMemcpyDeviceToHost, stream_));
  XPUSIM_CUDA(cudaStreamSynchronize(stream_));
  cudaEventDestroy(joined);
  XPUSIM_CUDA(cudaEventElapsedTime(&last_step_ms_, step_start_, step_end_));
  last_loss_ = *loss_host_;
  if (profile_)
    for (size_t k = 0; k < op_event_ops_.size(); ++k) {
      float ms = 0;
      XPUSIM_CUDA(cudaEventElapsedTime(&ms, op_events_[k].first, op_events_[k].second));
      op_times_ms_.emplace_back(op_event_ops_[k], ms);
    }
  release_step_tensors();
  bool found = *found_inf_host_ != 0;
  ++step_;
  return found;
}

Replica::CommBuffers Replica::prepare_all_reduce(int ar) {
  XPUSIM_CUDA(cudaSetDevice(o_.device));
  const OpNode& n = g_.op(ar);
  CommBuffers b;
  b.send = static_cast<const float*>(P(n.inputs[0]));
  b.recv = static_cast<float*>(alloc_tensor(n.outputs[0]));
  b.count = static_cast<size_t>(numel(n.inputs[0]));
  // The gradient is complete once the compute stream has passed its producer.
  cudaEvent_t ready;
  XPUSIM_CUDA(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  XPUSIM_CUDA(cudaEventRecord(ready, stream_));
  XPUSIM_CUDA(cudaStreamWaitEvent(comm_stream_, ready, 0));
  cudaEventDestroy(ready);  // destruction is deferred by CUDA until the event completes
  b.stream = comm_stream_;
  return b;
}

void Replica::all_reduce_launched(int ar) {
  XPUSIM_CUDA(cudaSetDevice(o_.device));  // events belong to the device current at creation
  auto it = comm_done_.find(ar);
  if (it == comm_done_.end()) {
    cudaEvent_t e;
    XPUSIM_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    it = comm_done_.emplace(ar, e).first;
  }
  XPUSIM_CUDA(cudaEventRecord(it->second, comm_stream_));
}

void Replica::upload(int t, const std::vector<float>& v) {
  XPUSIM_CUDA(cudaSetDevice(o_.device));
  const Tensor& T = g_.tensor(t);
  if (static_cast<int64_t>(v.size()) != T.desc.numel()) throw InternalError("upload: size mismatch for " + T.name);
  void* dst = alloc_tensor(t);
  XPUSIM_CUDA(cudaStreamSynchronize(stream_));
  if (T.desc.dtype == DType::int32 || T.desc.dtype == DType::uint8) {
    size_t eb = static_cast<size_t>(dtype_bytes(T.desc.dtype));
    std::vector<unsigned char> raw(v.size() * eb);
    for (size_t i = 0; i < v.size(); ++i) {
      if (eb == 4) {
        int32_t x = static_cast<int32_t>(std::lround(v[i]));
        std::memcpy(&raw[i * 4], &x, 4);
      } else {
        raw[i] = static_cast<unsigned char>(std::lround(v[i]));
      }
    }
    XPUSIM_CUDA(cudaMemcpy(dst, raw.data(), raw.size(), cudaMemcpyHostToDevice));
    return;
  }
  // Staging in fp32 through the pool, so a batch too large for the device is the pool's
  // out-of-memory error; the block is reused by the step's tensors afterwards.
  float* tmp = static_cast<float*>(pool_->allocate(v.size() * sizeof(float)));
  XPUSIM_CUDA(cudaMemcpy(tmp, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice));
  k_cast(tmp, DType::fp32, dst, T.desc.dtype, T.desc.numel(), stream_);
  XPUSIM_CUDA(cudaStreamSynchronize(stream_));
  pool_->release(tmp);
}

std::vector<float> Replica::download(int t) {
  XPUSIM_CUDA(cudaSetDevice(o_.device));
  const Tensor& T = g_.tensor(t);
  std::vector<float> v(static_cast<size_t>(T.desc.numel()));
  XPUSIM_CUDA(cudaStreamSynchronize(stream_));
  if (T.desc.dtype == DType::int32 || T.desc.dtype == DType::uint8) {
    size_t eb = static_cast<size_t>(dtype_bytes(T.desc.dtype));
    std::vector<unsigned char> raw(v.size() * eb);
    XPUSIM_CUDA(cudaMemcpy(raw.data(), P(t), raw.size(), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < v.size(); ++i) {
      if (eb == 4) {
        int32_t x;
        std::memcpy(&x, &raw[i * 4], 4);
        v[i] = static_cast<float>(x);
      } else {
        v[i] = raw[i];
      }
    }
    return v;
  }
  float* tmp = static_cast<float*>(pool_->allocate(v.size() * sizeof(float)));
  k_cast(P(t), T.desc.dtype, tmp, DType::fp32, T.desc.numel(), stream_);
  XPUSIM_CUDA(cudaStreamSynchronize(stream_));
  XPUSIM_CUDA(cudaMemcpy(v.data(), tmp, v.size() * sizeof(float), cudaMemcpyDeviceToHost));
  pool_->release(tmp);
  return v;
}

}  // namespace xpusim::cuda
