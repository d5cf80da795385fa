// Op handlers for what oneDNN has no primitive for, written with OpenMP loops and Eigen:
// softmax cross-entropy, LSTM (backpropagation through time), embedding, dropout, n-ary
// add, elementwise mul, concat/split, the optimizers and the single-replica all-reduce.
// Parallel loops use static schedules and every reduction has a fixed order, so results
// are bit-reproducible for a fixed seed and thread count.
#include <Eigen/Dense>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "common/error.hpp"
#include "devices/cpu/runner.hpp"
#include "models/head_repeat.hpp"

namespace xpusim::cpu {

// Elementwise loops below this many elements run on one thread: a parallel region costs a
// fork/join (and, on a loaded machine, a wait for every thread to be scheduled), which
// dominates small tensors such as batch-norm scales and biases. Results do not change.
constexpr int64_t kParallelMin = 1 << 15;

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapMat = Eigen::Map<RowMat>;
using CMapMat = Eigen::Map<const RowMat>;

Runner::Runner(const OpGraph& g, const ExecOptions& o)
    : g_(g), opts(o), eng(dnnl::engine::kind::cpu, 0), strm(eng) {
  bf16 = g.precision == Precision::bf16 || g.precision == Precision::mixed_bf16;
  if (bf16 && o.bf16_path == Bf16Path::native && !cpu_has_native_bf16())
    throw UnavailableError(std::string("cpu: native bf16 needs avx512_core_bf16 or AMX; this CPU has ") +
                           cpu_isa_name());
  bf16_native = bf16 && o.bf16_path != Bf16Path::emulated && cpu_has_native_bf16();
  avx512 = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core;
  exact_bf16_out.assign(static_cast<size_t>(g.num_ops()), 0);
  choose_layouts();
  choose_weight_layouts();
  state.resize(static_cast<size_t>(g.num_ops()));
  weight_copies.resize(static_cast<size_t>(g.num_ops()));
}

// bf16 is fp32 with the low 16 mantissa bits dropped; round to nearest even on the
// dropped half (NaN stays NaN because its exponent bits are kept).
void round_to_bf16(float* p, int64_t n) {
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, &p[i], 4);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    else u = (u & 0xffff0000u) | ((u & 0x007fffffu) ? 0x00400000u : 0u);  // inf stays inf, NaN stays NaN
    std::memcpy(&p[i], &u, 4);
  }
}

// C = alpha op(A) op(B) + beta C on row-major matrices, through oneDNN's sgemm: it dispatches
// at run time to the host's ISA (AVX2 or AVX-512 with FMA), which Eigen, compiled for the
// generic x86-64 baseline (4-wide SSE, no FMA), cannot; 3-4x faster on this project's
// machines. oneDNN's sgemm is deterministic for a fixed thread count.
static void sgemm_rm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, const float* b, float beta, float* c) {
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, n);
  if (st != dnnl_success) throw InternalError("oneDNN sgemm failed with status " + std::to_string(static_cast<int>(st)));
}

float* Runner::weight_operand(int op, int t) {
  // Native primitives read the fp32 master weight through a reorder to bf16 (which rounds
  // to nearest even), so no rounded copy is kept.
  if (!bf16 || bf16_native || g_.tensor(t).role != TensorRole::weight) return ptr(t);
  auto& c = weight_copies[static_cast<size_t>(op)];
  const int64_t n = numel(t);
  if (c.empty()) c.resize(static_cast<size_t>(n));  // allocated once: primitives keep the pointer
  std::memcpy(c.data(), ptr(t), static_cast<size_t>(n) * sizeof(float));
  round_to_bf16(c.data(), n);
  return c.data();
}

void Runner::on_Input(const OpGraph&, int) {}  // the host fills inputs before the step

void Runner::on_Reshape(const OpGraph&, int) {}  // views alias their source (memory_plan)

void Runner::on_Add(const OpGraph& g, int i) {
  if (add_blocked(g, i)) return;
  const OpNode& op = g.op(i);
  float* y = ptr(op.outputs[0]);
  const int64_t n = numel(op.outputs[0]);
  std::vector<const float*> xs;
  for (int t : op.inputs) xs.push_back(ptr(t));
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t k = 0; k < n; ++k) {
    float acc = xs[0][k];
    for (size_t j = 1; j < xs.size(); ++j) acc += xs[j][k];
    y[k] = acc;
  }
}

void Runner::on_Mul(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);
  const float* a = ptr(op.inputs[0]);
  const float* b = ptr(op.inputs[1]);
  float* y = ptr(op.outputs[0]);
  const int64_t n = numel(op.outputs[0]);
  if (numel(op.inputs[0]) != n || numel(op.inputs[1]) != n)
    throw UserError("the cpu backend does not execute the broadcasting product '" + op.name +
                    "' (an imported model's gate or layer scale); predict prices it");
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t k = 0; k < n; ++k) y[k] = a[k] * b[k];
}

namespace {
// Concat/split along `axis`: each part is `outer` runs of (its axis extent x inner) floats.
void concat_split(Runner& r, const OpGraph& g, const std::vector<int>& parts, int whole, int axis, bool split) {
  const Shape& s = g.tensor(whole).desc.shape;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= s[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t whole_run = s[static_cast<size_t>(axis)] * inner;
  // An imported model's slices, pads and resizes are one-input Concats priced as traffic
  // (ModelBuilder::copy_to); this backend executes only true concatenations.
  int64_t extent = 0;
  for (int t : parts) {
    const Shape& ps = g.tensor(t).desc.shape;
    for (size_t d = 0; d < s.size(); ++d)
      if (ps.size() != s.size() || (static_cast<int>(d) != axis && ps[d] != s[d]))
        throw UserError("the cpu backend does not execute the data-movement op '" + g.tensor(whole).name +
                        "' (a slice, pad or resize of an imported model); predict prices it");
    extent += ps[static_cast<size_t>(axis)];
  }
  if (extent != s[static_cast<size_t>(axis)])
    throw UserError("the cpu backend does not execute the data-movement op '" + g.tensor(whole).name +
                    "' (a slice, pad or resize of an imported model); predict prices it");
  float* w = r.ptr(whole);
  int64_t offset = 0;
  for (int t : parts) {
    const int64_t run = g.tensor(t).desc.shape[static_cast<size_t>(axis)] * inner;
    float* p = r.ptr(t);
#pragma omp parallel for schedule(static)
    for (int64_t o = 0; o < outer; ++o) {
      float* wp = w + o * whole_run + offset;
      float* pp = p + o * run;
      if (split) std::memcpy(pp, wp, static_cast<size_t>(run) * sizeof(float));
      else std::memcpy(wp, pp, static_cast<size_t>(run) * sizeof(float));
    }
    offset += run;
  }
}

// Counter-based random bits: splitmix64 of (seed, op, step, counter), so masks do not depend
// on the thread schedule.
inline uint64_t hash_bits(uint64_t seed, uint64_t op, uint64_t step, uint64_t k) {
  uint64_t z = seed * 0x9e3779b97f4a7c15ull ^ (op << 40) ^ (step << 20) ^ k;
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
}  // namespace

void Runner::on_Concat(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);
  if (const auto h = head_repeat_of(g, op)) {  // grouped-query attention's key/value repeat
    head_repeat_forward(*h, ptr(op.inputs[0]), ptr(op.outputs[0]));
    return;
  }
  concat_split(*this, g, op.inputs, op.outputs[0], op.attrs.axis, false);
}

void Runner::on_Split(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);
  if (const auto h = head_repeat_of(g, op)) {  // its gradient: the group's sum per key/value head
    head_repeat_backward(*h, ptr(op.inputs[0]), ptr(op.outputs[0]));
    return;
  }
  concat_split(*this, g, op.outputs, op.inputs[0], op.attrs.axis, true);
}

// Inverted dropout (scale kept units by 1/(1-rate) at training time, identity at test).
void Runner::on_Dropout(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);
  const float* x = ptr(op.inputs[0]);
  float* y = ptr(op.outputs[0]);
  float* mask = ptr(op.outputs[1]);
  const int64_t n = numel(op.inputs[0]);
  const float rate = static_cast<float>(op.attrs.rate);
  const float scale = 1.0f / (1.0f - rate);
  const bool on = training && rate > 0;
  const uint64_t seed = opts.seed, step = dropout_step;
  // One 64-bit hash gives two 24-bit uniforms (elements 2j and 2j+1): half the multiplies.
  const int64_t pairs = (n + 1) / 2;
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t j = 0; j < pairs; ++j) {
    const uint64_t z = hash_bits(seed, static_cast<uint64_t>(i), step, static_cast<uint64_t>(j));
    for (int64_t k = 2 * j; k < std::min(n, 2 * j + 2); ++k) {
      const uint64_t bits = k == 2 * j ? z >> 40 : (z >> 16) & 0xffffffull;
      const float keep = !on || static_cast<float>(bits) * (1.0f / 16777216.0f) >= rate ? 1.f : 0.f;
      mask[k] = keep;
      y[k] = on ? x[k] * keep * scale : x[k];
    }
  }
}

void Runner::on_DropoutBackward(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);  // in: {dy, mask}
  const float* dy = ptr(op.inputs[0]);
  const float* mask = ptr(op.inputs[1]);
  float* dx = ptr(op.outputs[0]);
  const int64_t n = numel(op.outputs[0]);
  const float scale = 1.0f / (1.0f - static_cast<float>(g.op(op.forward_op).attrs.rate));
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t k = 0; k < n; ++k) dx[k] = dy[k] * mask[k] * scale;
}

// Mean softmax cross-entropy over rows (sigmoid cross-entropy when there is one class).
// Outputs {loss [1], probs}. Log-sum-exp is shifted by the row max for stability.
void Runner::on_SoftmaxCrossEntropy(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);
  const float* z = ptr(op.inputs[0]);
  const float* labels = ptr(op.inputs[1]);
  float* probs = ptr(op.outputs[1]);
  const int64_t c = g.tensor(op.inputs[0]).desc.shape.back();
  const int64_t rows = numel(op.inputs[0]) / c;
  std::vector<double> row_loss(static_cast<size_t>(rows));
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* zr = z + r * c;
    float* pr = probs + r * c;
    if (c == 1) {
      const double x = zr[0], y = labels[r];
      // softplus(x) - y x, written to avoid overflow of exp(x).
      row_loss[static_cast<size_t>(r)] = std::max(x, 0.0) - x * y + std::log1p(std::exp(-std::abs(x)));
      pr[0] = sigmoid(zr[0]);
      continue;
    }
    float mx = zr[0];
    for (int64_t k = 1; k < c; ++k) mx = std::max(mx, zr[k]);
    double sum = 0;
    for (int64_t k = 0; k < c; ++k) sum += std::exp(static_cast<double>(zr[k] - mx));
    for (int64_t k = 0; k < c; ++k) pr[k] = static_cast<float>(std::exp(static_cast<double>(zr[k] - mx)) / sum);
    const int64_t lab = static_cast<int64_t>(labels[r]);
    row_loss[static_cast<size_t>(r)] = std::log(sum) - static_cast<double>(zr[lab] - mx);
  }
  double total = 0;
  for (double l : row_loss) total += l;  // fixed order: reproducible
  ptr(op.outputs[0])[0] = static_cast<float>(total / static_cast<double>(rows));
}

void Runner::on_SoftmaxCrossEntropyBackward(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);  // in: {probs, labels}
  const float* p = ptr(op.inputs[0]);
  const float* labels = ptr(op.inputs[1]);
  float* dz = ptr(op.outputs[0]);
  const int64_t c = g.tensor(op.inputs[0]).desc.shape.back();
  const int64_t rows = numel(op.inputs[0]) / c;
  const float inv = 1.0f / static_cast<float>(rows);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    if (c == 1) {
      dz[r] = (p[r] - labels[r]) * inv;
      continue;
    }
    const int64_t lab = static_cast<int64_t>(labels[r]);
    for (int64_t k = 0; k < c; ++k) dz[r * c + k] = (p[r * c + k] - (k == lab ? 1.0f : 0.0f)) * inv;
  }
}

void Runner::on_Embedding(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);  // in: {ids, table}
  const float* ids = ptr(op.inputs[0]);
  const float* table = ptr(op.inputs[1]);
  float* y = ptr(op.outputs[0]);
  const int64_t vocab = g.tensor(op.inputs[1]).desc.shape[0], dim = g.tensor(op.inputs[1]).desc.shape[1];
  const int64_t n = numel(op.inputs[0]);
  for (int64_t k = 0; k < n; ++k)
    if (ids[k] < 0 || ids[k] >= static_cast<float>(vocab))
      throw UserError("embedding " + op.name + ": token id " + std::to_string(ids[k]) + " outside [0, " +
                      std::to_string(vocab) + ")");
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t k = 0; k < n; ++k)
    std::memcpy(y + k * dim, table + static_cast<int64_t>(ids[k]) * dim, static_cast<size_t>(dim) * sizeof(float));
}

// Scatter-add of output-gradient rows into the table gradient; parallel over feature
// columns so that every table row is summed in token order (deterministic).
void Runner::on_EmbeddingBackward(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);  // in: {dy, ids}
  const float* dy = ptr(op.inputs[0]);
  const float* ids = ptr(op.inputs[1]);
  float* dt = ptr(op.outputs[0]);
  const int64_t dim = g.tensor(op.outputs[0]).desc.shape[1];
  const int64_t n = numel(op.inputs[1]);
  std::memset(dt, 0, static_cast<size_t>(numel(op.outputs[0])) * sizeof(float));
  // Threads own column slices; within a slice, rows are walked in token order and each
  // token's slice is contiguous (a column-at-a-time walk touched a new cache line per add).
  const int64_t slices = std::max<int64_t>(1, std::min<int64_t>(dim / 16, omp_get_max_threads()));
#pragma omp parallel for schedule(static) if (n * dim > kParallelMin)
  for (int64_t sl = 0; sl < slices; ++sl) {
    const int64_t d0 = dim * sl / slices, d1 = dim * (sl + 1) / slices;
    for (int64_t k = 0; k < n; ++k) {
      float* row = dt + static_cast<int64_t>(ids[k]) * dim;
      const float* g = dy + k * dim;
      for (int64_t d = d0; d < d1; ++d) row[d] += g[d];
    }
  }
}

// LSTM over a whole sequence, Keras gate order (i, f, c, o):
//   z = x_t W + h_{t-1} U + b;  i, f, o = sigmoid;  g = tanh;  c_t = f c_{t-1} + i g;
//   h_t = o tanh(c_t).  The saved state [T, N, 6H] holds i, f, g, o, c_t, tanh(c_t) per
// timestep (h_{t-1} is recomputed from o and tanh(c) of the previous step).
// Only h_{t-1} U depends on the previous step, so x W + b is one [N*T, F] x [F, 4H] GEMM for
// the whole sequence before the loop (as cuDNN and oneDNN RNNs do), and the gate
// nonlinearities run as vectorised Eigen array expressions over [N, H] blocks.
void Runner::on_LSTM(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);
  const OpAttrs& a = op.attrs;
  const int64_t n = g.tensor(op.inputs[0]).desc.shape[0], T = a.seq_len, F = a.input_size, H = a.hidden;
  CMapMat X(ptr(op.inputs[0]), n * T, F);  // rows r * T + t
  CMapMat W(ptr(op.inputs[1]), F, 4 * H), U(ptr(op.inputs[2]), H, 4 * H);
  Eigen::Map<const Eigen::RowVectorXf> b(ptr(op.inputs[3]), 4 * H);
  float* y = ptr(op.outputs[0]);
  float* st = ptr(op.outputs[1]);
  RowMat zx(n * T, 4 * H);
  sgemm_rm(false, false, n * T, 4 * H, F, X.data(), W.data(), 0.0f, zx.data());
  zx.rowwise() += b;
  RowMat h = RowMat::Zero(n, H), c = RowMat::Zero(n, H), z(n, 4 * H);
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = a.reverse ? T - 1 - s : s;
    for (int64_t r = 0; r < n; ++r) z.row(r) = zx.row(r * T + t);
    if (s > 0) sgemm_rm(false, false, n, 4 * H, H, h.data(), U.data(), 1.0f, z.data());
    MapMat S(st + t * n * 6 * H, n, 6 * H);
    S.middleCols(0, H).array() = z.middleCols(0, H).array().logistic();      // i
    S.middleCols(H, H).array() = z.middleCols(H, H).array().logistic();      // f
    S.middleCols(2 * H, H).array() = z.middleCols(2 * H, H).array().tanh();  // g
    S.middleCols(3 * H, H).array() = z.middleCols(3 * H, H).array().logistic();  // o
    c.array() = S.middleCols(H, H).array() * c.array() + S.middleCols(0, H).array() * S.middleCols(2 * H, H).array();
    S.middleCols(4 * H, H) = c;
    S.middleCols(5 * H, H).array() = c.array().tanh();
    h.array() = S.middleCols(3 * H, H).array() * S.middleCols(5 * H, H).array();
    if (a.return_sequences)
      for (int64_t r = 0; r < n; ++r) std::memcpy(y + (r * T + t) * H, &h(r, 0), static_cast<size_t>(H) * sizeof(float));
  }
  if (!a.return_sequences) std::memcpy(y, h.data(), static_cast<size_t>(n * H) * sizeof(float));
}

// Backpropagation through time. Only dh_{t-1} = dz_t U^T is serial; the gate gradients of
// every step are kept in dZ [N*T, 4H] (rows r * T + t, like x), so dW = X^T dZ,
// dU = H_prev^T dZ, db = colsum(dZ) and dx = dZ W^T are single GEMMs after the loop.
void Runner::on_LSTMBackward(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);  // in: {dy, x, W, U, state}; out: [dx], dW, dU, db
  const OpAttrs& a = g.op(op.forward_op).attrs;
  const int64_t n = g.tensor(op.inputs[1]).desc.shape[0], T = a.seq_len, F = a.input_size, H = a.hidden;
  const float* dy = ptr(op.inputs[0]);
  CMapMat X(ptr(op.inputs[1]), n * T, F);
  CMapMat W(ptr(op.inputs[2]), F, 4 * H), U(ptr(op.inputs[3]), H, 4 * H);
  const float* st = ptr(op.inputs[4]);
  const bool has_dx = op.outputs.size() == 4;
  MapMat dW(ptr(op.outputs[has_dx ? 1 : 0]), F, 4 * H), dU(ptr(op.outputs[has_dx ? 2 : 1]), H, 4 * H);
  Eigen::Map<Eigen::RowVectorXf> db(ptr(op.outputs[has_dx ? 3 : 2]), 4 * H);
  RowMat dh = RowMat::Zero(n, H), dc = RowMat::Zero(n, H), dz(n, 4 * H);
  RowMat dZ(n * T, 4 * H), hprev(n * T, H);
  for (int64_t s = T - 1; s >= 0; --s) {
    const int64_t t = a.reverse ? T - 1 - s : s;
    const int64_t tp = a.reverse ? t + 1 : t - 1;  // previous timestep in processing order
    CMapMat S(st + t * n * 6 * H, n, 6 * H);
    if (a.return_sequences) {
      for (int64_t r = 0; r < n; ++r)
        dh.row(r) += Eigen::Map<const Eigen::RowVectorXf>(dy + (r * T + t) * H, H);
    } else if (s == T - 1) {
      dh += CMapMat(dy, n, H);
    }
    auto ig = S.middleCols(0, H).array(), fg = S.middleCols(H, H).array(), gg = S.middleCols(2 * H, H).array(),
         og = S.middleCols(3 * H, H).array(), tc = S.middleCols(5 * H, H).array();
    dc.array() += dh.array() * og * (1 - tc * tc);
    if (s > 0) {
      CMapMat P(st + tp * n * 6 * H, n, 6 * H);
      dz.middleCols(H, H).array() = dc.array() * P.middleCols(4 * H, H).array() * fg * (1 - fg);
      for (int64_t r = 0; r < n; ++r)
        hprev.row(r * T + t).array() = P.row(r).segment(3 * H, H).array() * P.row(r).segment(5 * H, H).array();
    } else {
      dz.middleCols(H, H).setZero();  // c_{-1} = 0
      for (int64_t r = 0; r < n; ++r) hprev.row(r * T + t).setZero();  // h_{-1} = 0
    }
    dz.middleCols(0, H).array() = dc.array() * gg * ig * (1 - ig);
    dz.middleCols(2 * H, H).array() = dc.array() * ig * (1 - gg * gg);
    dz.middleCols(3 * H, H).array() = dh.array() * tc * og * (1 - og);
    dc.array() *= fg;
    for (int64_t r = 0; r < n; ++r) dZ.row(r * T + t) = dz.row(r);
    if (s > 0) sgemm_rm(false, true, n, H, 4 * H, dz.data(), U.data(), 0.0f, dh.data());
  }
  sgemm_rm(true, false, F, 4 * H, n * T, X.data(), dZ.data(), 0.0f, dW.data());
  sgemm_rm(true, false, H, 4 * H, n * T, hprev.data(), dZ.data(), 0.0f, dU.data());
  db = dZ.colwise().sum();
  if (has_dx) sgemm_rm(false, true, n * T, F, 4 * H, dZ.data(), W.data(), 0.0f, ptr(op.outputs[0]));
}

// PyTorch's SGD with momentum (dampening 0): v = mu v + (g + wd w);  w -= lr v.
void Runner::on_SGDMomentumUpdate(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);  // in: {w, grad, v}
  float* w = ptr(op.inputs[0]);
  const float* gr = ptr(op.inputs[1]);
  float* v = ptr(op.inputs[2]);
  const int64_t n = numel(op.inputs[0]);
  const float mu = opts.momentum, lr = opts.lr, wd = opts.weight_decay;
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t k = 0; k < n; ++k) {
    v[k] = mu * v[k] + gr[k] + wd * w[k];
    w[k] -= lr * v[k];
  }
}

// Adam (Kingma & Ba 2015, Algorithm 1) with bias-corrected moments.
void Runner::on_AdamUpdate(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);  // in: {w, grad, m, v}
  if (i == first_adam_op()) ++adam_t;
  float* w = ptr(op.inputs[0]);
  const float* gr = ptr(op.inputs[1]);
  float* m = ptr(op.inputs[2]);
  float* v = ptr(op.inputs[3]);
  const int64_t n = numel(op.inputs[0]);
  const float b1 = opts.adam_beta1, b2 = opts.adam_beta2, eps = opts.adam_eps, lr = opts.lr;
  const float c1 = 1.0f - std::pow(b1, static_cast<float>(adam_t)), c2 = 1.0f - std::pow(b2, static_cast<float>(adam_t));
  // Locals, not members, in the loop: a member could alias w, m or v and would keep the
  // compiler from vectorising (with -fno-math-errno, CMakeLists.txt, sqrt vectorises too).
  const float wd = opts.weight_decay;
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t k = 0; k < n; ++k) {
    const float gk = gr[k] + wd * w[k];
    m[k] = b1 * m[k] + (1 - b1) * gk;
    v[k] = b2 * v[k] + (1 - b2) * gk * gk;
    w[k] -= lr * (m[k] / c1) / (std::sqrt(v[k] / c2) + eps);
  }
}

// One machine is one replica: the sum over replicas is the gradient itself.
void Runner::on_AllReduce(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);
  if (op.attrs.replicas != 1)
    throw UnavailableError("cpu backend runs a single replica; all-reduce over " + std::to_string(op.attrs.replicas) +
                           " replicas needs a multi-process runtime");
  std::memcpy(ptr(op.outputs[0]), ptr(op.inputs[0]), static_cast<size_t>(numel(op.inputs[0])) * sizeof(float));
}

void* Runner::scratch(int k, size_t bytes) {
  const size_t slot = static_cast<size_t>(k);
  while (scratch_.size() <= slot) {
    scratch_.emplace_back(nullptr, [](float* p) { std::free(p); });
    scratch_size_.push_back(0);
  }
  if (scratch_size_[slot] < bytes) {
    size_t sz = (bytes + 63) / 64 * 64;
    float* p = static_cast<float*>(std::aligned_alloc(64, sz));
    if (!p) throw UnavailableError("cpu: out of memory allocating " + std::to_string(sz) + " scratch bytes");
    scratch_[slot].reset(p);
    scratch_size_[slot] = sz;
  }
  return scratch_[slot].get();
}

int64_t Runner::scratch_bytes() const {
  int64_t n = 0;
  for (size_t s : scratch_size_) n += static_cast<int64_t>(s);
  return n;
}

int Runner::first_adam_op() {
  if (first_adam_ < -1) {
    first_adam_ = -1;
    for (int k : g_.schedule())
      if (g_.op(k).kind == OpKind::AdamUpdate) {
        first_adam_ = k;
        break;
      }
  }
  return first_adam_;
}

}  // namespace xpusim::cpu
