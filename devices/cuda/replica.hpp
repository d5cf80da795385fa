// One GPU's executor of a training-step graph: owns the device's stream, cuDNN and cuBLAS
// handles, caching pool, tensors and weights, and runs ops one at a time through the
// OpVisitor (every op kind has a handler, enforced at compile time). Several replicas on
// several GPUs are driven by CudaEngine (cuda_engine.cpp), which also launches the NCCL
// all-reduces; a replica only waits for them.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "devices/cuda/algo_cache.hpp"
#include "devices/cuda/caching_pool.hpp"
#include "devices/cuda/gemm.hpp"
#include "models/graph.hpp"
#include "engine/op_visitor.hpp"

namespace xpusim::cuda {

// Optimizer constants shared by every model: the engine times steps, it does not tune
// training. SGD: lr 0.1, momentum 0.9, weight decay 1e-4 (Goyal et al. 2017, ResNet-50
// recipe); Adam: lr 1e-3, betas 0.9/0.999, eps 1e-8 (Kingma & Ba 2015 defaults).
struct OptimizerConstants {
  float sgd_lr = 0.1f, sgd_momentum = 0.9f, sgd_weight_decay = 1e-4f;
  float adam_lr = 1e-3f, adam_beta1 = 0.9f, adam_beta2 = 0.999f, adam_eps = 1e-8f;
};

struct ReplicaOptions {
  int device = 0;          // CUDA device ordinal
  int replica = 0;         // index among data-parallel replicas (selects the data shard seed)
  uint64_t seed = 1;       // weights use `seed` (identical on all replicas), data seed + replica
  OptimizerConstants opt;
  bool keep_step_tensors = false;  // tests: keep every tensor of a step readable until end_step
};

class Replica : public OpVisitor<void> {
 public:
  Replica(const OpGraph& g, ReplicaOptions o);
  ~Replica() override;
  Replica(const Replica&) = delete;
  Replica& operator=(const Replica&) = delete;

  // A step: begin_step, run_op for each op of the schedule, end_step (which waits for the
  // device). loss_scale multiplies the loss gradient (1 unless fp16 loss scaling is on).
  void begin_step(float loss_scale, bool profile_ops);
  void run_op(int op);
  // Returns whether a non-finite gradient was found (the update was skipped on the device).
  bool end_step();
  float last_loss() const { return last_loss_; }
  float last_step_ms() const { return last_step_ms_; }
  // Per-op device time of the last step when begin_step(..., profile_ops = true), by op index.
  const std::vector<std::pair<int, float>>& op_times_ms() const { return op_times_ms_; }

  // For the engine's NCCL all-reduce of op `ar` (an AllReduce): the gradient buffer, the
  // (newly allocated) output buffer, the element count and the stream to run it on, which
  // has already been made to wait for the gradient's producer.
  struct CommBuffers {
    const float* send = nullptr;
    float* recv = nullptr;
    size_t count = 0;
    cudaStream_t stream = nullptr;
  };
  CommBuffers prepare_all_reduce(int ar);
  void all_reduce_launched(int ar);  // records the event on_AllReduce will wait for

  // Host access for tests and for the synthetic data: values are converted to/from the
  // tensor's dtype (int32 tensors round). Synchronises the device.
  void upload(int tensor, const std::vector<float>& values);
  std::vector<float> download(int tensor);
  bool has_buffer(int tensor) const;
  void ensure_buffer(int tensor);  // allocates a tensor for a test to fill before run_op

  const PoolStats& pool_stats() const { return pool_->stats(); }
  const AlgoCache& algo_cache() const { return algo_cache_; }
  int device() const { return o_.device; }
  cudaStream_t stream() const { return stream_; }

#define XPUSIM_REPLICA_HANDLER(k, n) void on_##k(const OpGraph& g, int op) override;
  XPUSIM_OP_KINDS(XPUSIM_REPLICA_HANDLER)
#undef XPUSIM_REPLICA_HANDLER

 private:
  friend struct ReplicaAccess;
  const OpGraph& g_;
  ReplicaOptions o_;
  cudaStream_t stream_ = nullptr, comm_stream_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::unique_ptr<CachingPool> pool_;
  AlgoCache algo_cache_;
  GemmMath math_ = GemmMath::fp32;
  Precision precision_ = Precision::fp32;

  std::vector<void*> ptr_;              // device buffer per tensor (views alias their base)
  std::vector<int> root_;               // view -> the tensor that owns the memory
  std::vector<int> last_use_;           // schedule position after which a step tensor dies
  std::vector<int> pos_;                // op index -> schedule position
  std::vector<bool> persistent_;        // weights, optimizer state, fed batch
  std::vector<int> update_grads_;       // gradients read by the optimizer ops
  std::map<int, void*> low_copy_;       // weight -> fp16/bf16 copy for tensor-core ops
  std::map<int, int64_t> low_copy_step_;
  std::map<int, std::pair<float*, float*>> bn_running_;  // BatchNorm op -> running mean, var
  std::map<int, cudaEvent_t> comm_done_;                 // AllReduce op -> its completion event
  int* found_inf_ = nullptr;            // device flag written by gradient unscaling
  float* loss_host_ = nullptr;          // pinned
  int* found_inf_host_ = nullptr;       // pinned
  int loss_tensor_ = -1;

  int64_t step_ = 0;
  int adam_step_ = 0;
  float loss_scale_ = 1.f;
  bool unscaled_ = false;
  bool profile_ = false;
  float last_loss_ = 0.f;
  float last_step_ms_ = 0.f;
  cudaEvent_t step_start_ = nullptr, step_end_ = nullptr;
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> op_events_;
  std::vector<int> op_event_ops_;
  std::vector<std::pair<int, float>> op_times_ms_;

  void plan();
  int64_t planned_peak_bytes() const;
  void check_fits();
  void init_persistent();
  void* alloc_tensor(int t);
  void release_dead(int op);
  void release_step_tensors();

  // Helpers for the handlers (replica_ops.cpp, replica_lstm.cpp).
  void* P(int t) const;                      // buffer of tensor t (InternalError if none)
  const void* weight_as(int t, DType dt);    // the weight in `dt` (fp32 master or a cast copy)
  DType dtype(int t) const { return g_.tensor(t).desc.dtype; }
  const Shape& shape(int t) const { return g_.tensor(t).desc.shape; }
  int64_t numel(int t) const { return g_.tensor(t).desc.numel(); }
  void* scratch(size_t bytes) { return pool_->allocate(bytes); }
  void free_scratch(void* p) { pool_->release(p); }
  void unscale_gradients_once();
  void run_conv(const OpGraph& g, int op, int direction);
};

}  // namespace xpusim::cuda
