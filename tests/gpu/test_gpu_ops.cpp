// GPU tests of the cuda backend: every op of small training steps is run on the device and
// compared with a host reference computed from the very inputs the device saw (downloaded
// before the op runs). The CPU backend (engine `cpu`) is not on this branch, so the
// references are the small host implementations below (naive loops, double accumulation).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <vector>

#include <cuda_runtime.h>

#include "devices/cuda/replica.hpp"
#include "models/builder.hpp"
#include "models/head_repeat.hpp"
#include "models/training.hpp"
#include "predict/predict.hpp"
#include "tests/unit/predict_request.hpp"

using namespace xpusim;
using namespace xpusim::cuda;
using Vec = std::vector<float>;

namespace {

// A run of MODEL on the CUDA engine: STEPS timed steps after WARMUP untimed ones.
PredictRequest cuda_run(const std::string& model, int64_t batch, const std::string& precision, int steps, int warmup,
                        int count = 1) {
  PredictRequest r = fixtures::predict_request("cuda", count, model, batch, precision);
  r.engine = "cuda";
  r.steps = steps;
  r.warmup = warmup;
  return r;
}

// Max abs error relative to the reference's max abs value.
// Largest absolute error over the largest reference magnitude, or over `scale` when that is
// larger: a reduction whose terms cancel (a bias gradient in front of a BatchNorm sums to ~0
// per channel, since BatchNorm's backward removes the mean) is judged against the magnitude
// of what was summed, the scale its rounding error grows with.
double rel_err(const Vec& got, const Vec& want, double scale = 0) {
  REQUIRE(got.size() == want.size());
  double e = 0, m = std::max(1e-6, scale);
  for (size_t i = 0; i < got.size(); ++i) {
    e = std::max(e, std::fabs(double(got[i]) - want[i]));
    m = std::max(m, std::fabs(double(want[i])));
  }
  return e / m;
}

struct Ctx {
  const OpGraph& g;
  const OpNode& n;
  std::vector<Vec> in, out;
  std::vector<double> scale;  // per output: magnitude of the summed terms (0: the result's own)
  const Shape& s(int t) const { return g.tensor(t).desc.shape; }
};

// Host references, by op kind. Each returns the expected value of every output.
Vec conv_fwd(const Shape& xs, const Vec& x, const Shape& ws, const Vec& w, const OpAttrs& a, const Shape& ys) {
  Vec y(size_t(ys[0] * ys[1] * ys[2] * ys[3]), 0.f);
  int64_t cg = ws[1], kg = ys[1] / a.groups;
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t k = 0; k < ys[1]; ++k)
      for (int64_t i = 0; i < ys[2]; ++i)
        for (int64_t j = 0; j < ys[3]; ++j) {
          double acc = 0;
          int64_t grp = k / kg;
          for (int64_t c = 0; c < cg; ++c)
            for (int r = 0; r < a.kernel_h; ++r)
              for (int q = 0; q < a.kernel_w; ++q) {
                int64_t h = i * a.stride_h - a.pad_h + r * a.dilation_h, v = j * a.stride_w - a.pad_w + q * a.dilation_w;
                if (h < 0 || h >= xs[2] || v < 0 || v >= xs[3]) continue;
                acc += double(x[size_t(((n * xs[1] + grp * cg + c) * xs[2] + h) * xs[3] + v)]) *
                       w[size_t(((k * cg + c) * a.kernel_h + r) * a.kernel_w + q)];
              }
          y[size_t(((n * ys[1] + k) * ys[2] + i) * ys[3] + j)] = float(acc);
        }
  return y;
}

// Backward data and filter as the adjoint of the forward loop (groups = 1 in these tests).
void conv_bwd(const Shape& xs, const Vec& x, const Shape& ws, const Vec& w, const OpAttrs& a, const Shape& ys,
              const Vec& dy, Vec* dx, Vec* dw) {
  if (dx) dx->assign(size_t(xs[0] * xs[1] * xs[2] * xs[3]), 0.f);
  if (dw) dw->assign(size_t(ws[0] * ws[1] * ws[2] * ws[3]), 0.f);
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t k = 0; k < ys[1]; ++k)
      for (int64_t i = 0; i < ys[2]; ++i)
        for (int64_t j = 0; j < ys[3]; ++j) {
          float g = dy[size_t(((n * ys[1] + k) * ys[2] + i) * ys[3] + j)];
          for (int64_t c = 0; c < ws[1]; ++c)
            for (int r = 0; r < a.kernel_h; ++r)
              for (int q = 0; q < a.kernel_w; ++q) {
                int64_t h = i * a.stride_h - a.pad_h + r, v = j * a.stride_w - a.pad_w + q;
                if (h < 0 || h >= xs[2] || v < 0 || v >= xs[3]) continue;
                size_t xi = size_t(((n * xs[1] + c) * xs[2] + h) * xs[3] + v);
                size_t wi = size_t(((k * ws[1] + c) * a.kernel_h + r) * a.kernel_w + q);
                if (dx) (*dx)[xi] += g * w[wi];
                if (dw) (*dw)[wi] += g * x[xi];
              }
        }
}

Vec matmul(const OpAttrs& a, const Vec& A, const Vec& B) {
  Vec c(size_t(a.batches * a.m * a.n));
  for (int64_t b = 0; b < a.batches; ++b) {
    const size_t oa = size_t(b * a.m * a.k), ob = size_t(b * a.k * a.n), oc = size_t(b * a.m * a.n);
    for (int64_t i = 0; i < a.m; ++i)
      for (int64_t j = 0; j < a.n; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < a.k; ++k)
          acc += double(a.trans_a ? A[oa + size_t(k * a.m + i)] : A[oa + size_t(i * a.k + k)]) *
                 (a.trans_b ? B[ob + size_t(j * a.k + k)] : B[ob + size_t(k * a.n + j)]);
        c[oc + size_t(i * a.n + j)] = float(acc);
      }
  }
  return c;
}

double gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double gelu_grad(double x) {
  return 0.5 * (1 + std::erf(x / std::sqrt(2.0))) + x * std::exp(-0.5 * x * x) * 0.3989422804014327;
}

// Multi-head attention on the host: q [N, Tq, D], k, v [N, Tk, D]; returns y and the
// probabilities [N, H, Tq, Tk]; with dy also dq, dk, dv (by the chain rule, written out).
struct HostAttention {
  Vec y, p, dq, dk, dv;
};
HostAttention host_attention(const Shape& qs, const Shape& ks, int64_t H, bool causal, const Vec& q, const Vec& k,
                             const Vec& v, const Vec* dy) {
  const int64_t N = qs[0], Tq = qs[1], Tk = ks[1], D = qs[2], dh = D / H;
  const double alpha = 1.0 / std::sqrt(double(dh));
  HostAttention r;
  r.y.assign(size_t(N * Tq * D), 0.f);
  r.p.assign(size_t(N * H * Tq * Tk), 0.f);
  if (dy) r.dq.assign(q.size(), 0.f), r.dk.assign(k.size(), 0.f), r.dv.assign(v.size(), 0.f);
  auto Q = [&](int64_t n, int64_t t, int64_t h, int64_t j) { return size_t((n * Tq + t) * D + h * dh + j); };
  auto K = [&](int64_t n, int64_t t, int64_t h, int64_t j) { return size_t((n * Tk + t) * D + h * dh + j); };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Tq; ++i) {
        std::vector<double> s(static_cast<size_t>(Tk)), pr(static_cast<size_t>(Tk), 0.0), dp(static_cast<size_t>(Tk), 0.0);
        double m = -1e300, sum = 0;
        const int64_t last = causal ? i : Tk - 1;
        for (int64_t j = 0; j <= last; ++j) {
          double acc = 0;
          for (int64_t e = 0; e < dh; ++e) acc += double(q[Q(n, i, h, e)]) * k[K(n, j, h, e)];
          s[size_t(j)] = alpha * acc;
          m = std::max(m, s[size_t(j)]);
        }
        for (int64_t j = 0; j <= last; ++j) sum += std::exp(s[size_t(j)] - m);
        for (int64_t j = 0; j <= last; ++j) pr[size_t(j)] = std::exp(s[size_t(j)] - m) / sum;
        for (int64_t j = 0; j < Tk; ++j) r.p[size_t(((n * H + h) * Tq + i) * Tk + j)] = float(pr[size_t(j)]);
        for (int64_t e = 0; e < dh; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < Tk; ++j) acc += pr[size_t(j)] * v[K(n, j, h, e)];
          r.y[Q(n, i, h, e)] = float(acc);
        }
        if (!dy) continue;
        double dot = 0;
        for (int64_t j = 0; j < Tk; ++j) {
          double acc = 0;
          for (int64_t e = 0; e < dh; ++e) acc += double((*dy)[Q(n, i, h, e)]) * v[K(n, j, h, e)];
          dp[size_t(j)] = acc;
          dot += acc * pr[size_t(j)];
          for (int64_t e = 0; e < dh; ++e) r.dv[K(n, j, h, e)] += float(pr[size_t(j)] * (*dy)[Q(n, i, h, e)]);
        }
        for (int64_t j = 0; j < Tk; ++j) {
          double ds = alpha * pr[size_t(j)] * (dp[size_t(j)] - dot);
          for (int64_t e = 0; e < dh; ++e) {
            r.dq[Q(n, i, h, e)] += float(ds * k[K(n, j, h, e)]);
            r.dk[K(n, j, h, e)] += float(ds * q[Q(n, i, h, e)]);
          }
        }
      }
  return r;
}

// Returns false when the kind has no reference here (checked elsewhere or trivially).
bool reference(Ctx& c, std::vector<Vec>& want) {
  const OpNode& n = c.n;
  const OpAttrs& a = n.attrs;
  switch (n.kind) {
    case OpKind::Conv2D: {
      Vec y = conv_fwd(c.s(n.inputs[0]), c.in[0], c.s(n.inputs[1]), c.in[1], a, c.s(n.outputs[0]));
      if (a.has_bias) {
        const Shape& ys = c.s(n.outputs[0]);
        for (size_t i = 0; i < y.size(); ++i) y[i] += c.in[2][size_t((int64_t(i) / (ys[2] * ys[3])) % ys[1])];
      }
      want = {y};
      return true;
    }
    case OpKind::Conv2DBackwardData: {
      const OpNode& f = c.g.op(n.forward_op);
      Vec dx;
      conv_bwd(c.s(f.inputs[0]), Vec(size_t(c.g.tensor(f.inputs[0]).desc.numel())), c.s(n.inputs[1]), c.in[1], a,
               c.s(f.outputs[0]), c.in[0], &dx, nullptr);
      want = {dx};
      return true;
    }
    case OpKind::Conv2DBackwardFilter: {
      const OpNode& f = c.g.op(n.forward_op);
      Vec dw;
      conv_bwd(c.s(n.inputs[0]), c.in[0], c.s(f.inputs[1]), Vec(size_t(c.g.tensor(f.inputs[1]).desc.numel())), a,
               c.s(n.inputs[1]), c.in[1], nullptr, &dw);
      want = {dw};
      if (n.outputs.size() > 1) {
        const Shape& ys = c.s(n.inputs[1]);
        Vec db(size_t(ys[1]), 0.f);
        Vec db_abs(size_t(ys[1]), 0.f);
        for (size_t i = 0; i < c.in[1].size(); ++i) {
          size_t ch = size_t((int64_t(i) / (ys[2] * ys[3])) % ys[1]);
          db[ch] += c.in[1][i];
          db_abs[ch] += std::fabs(c.in[1][i]);
        }
        want.push_back(db);
        c.scale = {0.0, double(*std::max_element(db_abs.begin(), db_abs.end()))};
      }
      return true;
    }
    case OpKind::MatMul: {
      Vec y = matmul(a, c.in[0], c.in[1]);
      if (!a.trans_a && n.inputs.size() > 2)
        for (size_t i = 0; i < y.size(); ++i) y[i] += c.in[2][i % size_t(a.n)];
      want = {y};
      if (a.trans_a && n.outputs.size() > 1) {
        // dY is input 1 (dW = X^T dY) or input 0 for a transposed weight (dW = dY^T X).
        const OpAttrs& f = c.g.op(n.forward_op).attrs;
        const Vec& dy = f.trans_b ? c.in[0] : c.in[1];
        Vec db(size_t(f.n), 0.f);
        for (size_t i = 0; i < dy.size(); ++i) db[i % size_t(f.n)] += dy[i];
        want.push_back(db);
      }
      return true;
    }
    case OpKind::LayerNorm: {
      const int64_t D = c.s(n.inputs[0]).back(), R = int64_t(c.in[0].size()) / D;
      Vec y(c.in[0].size()), mean(static_cast<size_t>(R)), rstd(static_cast<size_t>(R));
      const bool beta = c.in.size() > 2;  // none: bias-free LayerNorm or RMSNorm (a.rms: mean 0)
      for (int64_t r = 0; r < R; ++r) {
        double m = 0, var = 0;
        for (int64_t j = 0; j < D; ++j) m += c.in[0][size_t(r * D + j)];
        m = a.rms ? 0.0 : m / double(D);
        for (int64_t j = 0; j < D; ++j) var += std::pow(c.in[0][size_t(r * D + j)] - m, 2);
        double rs = 1.0 / std::sqrt(var / double(D) + a.eps);
        mean[size_t(r)] = float(m), rstd[size_t(r)] = float(rs);
        for (int64_t j = 0; j < D; ++j)
          y[size_t(r * D + j)] =
              float((c.in[0][size_t(r * D + j)] - m) * rs * c.in[1][size_t(j)] + (beta ? c.in[2][size_t(j)] : 0.f));
      }
      want = {y, mean, rstd};
      return true;
    }
    case OpKind::LayerNormBackward: {  // in: dy, x, gamma, mean, rstd
      const int64_t D = c.s(n.inputs[1]).back(), R = int64_t(c.in[1].size()) / D;
      Vec dx(c.in[1].size()), dg(static_cast<size_t>(D), 0.f), db(static_cast<size_t>(D), 0.f);
      for (int64_t r = 0; r < R; ++r) {
        double mg = 0, mgx = 0, rs = c.in[4][size_t(r)];
        auto xh = [&](int64_t j) { return (c.in[1][size_t(r * D + j)] - c.in[3][size_t(r)]) * rs; };
        for (int64_t j = 0; j < D; ++j) {
          double g = double(c.in[2][size_t(j)]) * c.in[0][size_t(r * D + j)];
          mg += g / double(D), mgx += g * xh(j) / double(D);
          dg[size_t(j)] += float(c.in[0][size_t(r * D + j)] * xh(j));
          db[size_t(j)] += c.in[0][size_t(r * D + j)];
        }
        if (a.rms) mg = 0;  // RMSNorm: the mean is the constant 0
        for (int64_t j = 0; j < D; ++j)
          dx[size_t(r * D + j)] = float(rs * (double(c.in[2][size_t(j)]) * c.in[0][size_t(r * D + j)] - mg - xh(j) * mgx));
      }
      want = {dx, dg, db};
      if (n.outputs.size() < 3) want.pop_back();  // no beta, no dbeta
      return true;
    }
    case OpKind::Attention: {
      HostAttention h = host_attention(c.s(n.inputs[0]), c.s(n.inputs[1]), a.heads, a.causal, c.in[0], c.in[1],
                                       c.in[2], nullptr);
      want = {h.y, h.p};
      return true;
    }
    case OpKind::AttentionBackward: {  // in: dy, q, k, v, probs
      const OpAttrs& f = c.g.op(n.forward_op).attrs;
      HostAttention h =
          host_attention(c.s(n.inputs[1]), c.s(n.inputs[2]), f.heads, f.causal, c.in[1], c.in[2], c.in[3], &c.in[0]);
      want = {h.dq, h.dk, h.dv};
      return true;
    }
    case OpKind::Softmax: {
      const int64_t C = c.s(n.inputs[0]).back(), R = int64_t(c.in[0].size()) / C;
      Vec y(c.in[0].size());
      for (int64_t r = 0; r < R; ++r) {
        double m = -1e300, s = 0;
        for (int64_t j = 0; j < C; ++j) m = std::max(m, double(c.in[0][size_t(r * C + j)]));
        for (int64_t j = 0; j < C; ++j) s += std::exp(c.in[0][size_t(r * C + j)] - m);
        for (int64_t j = 0; j < C; ++j) y[size_t(r * C + j)] = float(std::exp(c.in[0][size_t(r * C + j)] - m) / s);
      }
      want = {y};
      return true;
    }
    case OpKind::SoftmaxBackward: {  // in: dy, y
      const int64_t C = c.s(n.inputs[1]).back(), R = int64_t(c.in[1].size()) / C;
      Vec dx(c.in[1].size());
      for (int64_t r = 0; r < R; ++r) {
        double dot = 0;
        for (int64_t j = 0; j < C; ++j) dot += double(c.in[0][size_t(r * C + j)]) * c.in[1][size_t(r * C + j)];
        for (int64_t j = 0; j < C; ++j)
          dx[size_t(r * C + j)] = float(c.in[1][size_t(r * C + j)] * (c.in[0][size_t(r * C + j)] - dot));
      }
      want = {dx};
      return true;
    }
    case OpKind::Transpose: {
      const Shape& xs = c.s(n.inputs[0]);
      const size_t rank = xs.size();
      std::vector<int64_t> stride(rank, 1), idx(rank, 0);
      for (size_t d = rank - 1; d-- > 0;) stride[d] = stride[d + 1] * xs[d + 1];
      Vec y(c.in[0].size());
      for (size_t o = 0; o < y.size(); ++o) {  // idx: the output multi-index, odometer order
        int64_t src = 0;
        for (size_t d = 0; d < rank; ++d) src += idx[d] * stride[size_t(a.perm[d])];
        y[o] = c.in[0][size_t(src)];
        for (size_t d = rank; d-- > 0;) {
          if (++idx[d] < xs[size_t(a.perm[d])]) break;
          idx[d] = 0;
        }
      }
      want = {y};
      return true;
    }
    case OpKind::Scale: {
      Vec y(c.in[0].size());
      for (size_t i = 0; i < y.size(); ++i) y[i] = float(a.alpha * c.in[0][i]);
      want = {y};
      return true;
    }
    case OpKind::BatchNorm: {
      const Shape& xs = c.s(n.inputs[0]);
      int64_t N = xs[0], C = xs[1], HW = c.g.tensor(n.inputs[0]).desc.numel() / (N * C);
      Vec y(c.in[0].size()), mean(static_cast<size_t>(C)), inv(static_cast<size_t>(C));
      for (int64_t ch = 0; ch < C; ++ch) {
        double s = 0, s2 = 0;
        for (int64_t i = 0; i < N; ++i)
          for (int64_t j = 0; j < HW; ++j) s += c.in[0][size_t((i * C + ch) * HW + j)];
        double m = s / double(N * HW);
        for (int64_t i = 0; i < N; ++i)
          for (int64_t j = 0; j < HW; ++j) s2 += std::pow(c.in[0][size_t((i * C + ch) * HW + j)] - m, 2);
        double is = 1.0 / std::sqrt(s2 / double(N * HW) + 1e-5);
        mean[size_t(ch)] = float(m), inv[size_t(ch)] = float(is);
        for (int64_t i = 0; i < N; ++i)
          for (int64_t j = 0; j < HW; ++j) {
            size_t k = size_t((i * C + ch) * HW + j);
            y[k] = float((c.in[0][k] - m) * is * c.in[1][size_t(ch)] + c.in[2][size_t(ch)]);
          }
      }
      want = {y, mean, inv};
      return true;
    }
    case OpKind::Activation: {
      Vec y(c.in[0].size());
      for (size_t i = 0; i < y.size(); ++i) {
        float x = c.in[0][i];
        y[i] = a.act == ActivationFn::relu      ? std::max(0.f, x)
               : a.act == ActivationFn::sigmoid ? 1.f / (1.f + std::exp(-x))
               : a.act == ActivationFn::gelu    ? float(gelu(x))
                                                : std::tanh(x);
      }
      want = {y};
      return true;
    }
    case OpKind::ActivationBackward: {
      Vec dx(c.in[0].size());
      for (size_t i = 0; i < dx.size(); ++i) {
        float y = c.in[1][i], g = c.in[0][i];
        if (a.act == ActivationFn::gelu) {  // input 1 is x for gelu
          dx[i] = float(g * gelu_grad(y));
          continue;
        }
        dx[i] = a.act == ActivationFn::relu ? (y > 0 ? g : 0.f) : a.act == ActivationFn::sigmoid ? g * y * (1 - y)
                                                                                                 : g * (1 - y * y);
      }
      want = {dx};
      return true;
    }
    case OpKind::Pool: {
      const Shape& xs = c.s(n.inputs[0]);
      const Shape& ys = c.s(n.outputs[0]);
      if (xs.size() != 4) return false;
      if (a.global_pool) {
        int64_t hw = xs[2] * xs[3];
        Vec y(size_t(xs[0] * xs[1]), 0.f);
        for (size_t i = 0; i < c.in[0].size(); ++i) y[i / size_t(hw)] += c.in[0][i] / float(hw);
        want = {y};
        return true;
      }
      Vec y(c.out[0].size());
      for (int64_t i = 0; i < ys[0] * ys[1]; ++i)
        for (int64_t p = 0; p < ys[2]; ++p)
          for (int64_t q = 0; q < ys[3]; ++q) {
            double best = -1e30, sum = 0;
            for (int r = 0; r < a.kernel_h; ++r)
              for (int s = 0; s < a.kernel_w; ++s) {
                int64_t h = p * a.stride_h - a.pad_h + r, w = q * a.stride_w - a.pad_w + s;
                if (h < 0 || h >= xs[2] || w < 0 || w >= xs[3]) continue;
                double v = c.in[0][size_t((i * xs[2] + h) * xs[3] + w)];
                best = std::max(best, v);
                sum += v;
              }
            y[size_t((i * ys[2] + p) * ys[3] + q)] =
                float(a.pool == PoolFn::max ? best : sum / double(a.kernel_h * a.kernel_w));
          }
      want = {y};
      return true;
    }
    case OpKind::Add: {
      Vec y(c.in[0].size(), 0.f);
      for (auto& v : c.in)
        for (size_t i = 0; i < y.size(); ++i) y[i] += v[i];
      want = {y};
      return true;
    }
    case OpKind::SoftmaxCrossEntropy: {
      int64_t C = c.s(n.inputs[0]).back(), R = int64_t(c.in[0].size()) / C;
      Vec p(c.in[0].size());
      double loss = 0;
      for (int64_t r = 0; r < R; ++r) {
        double m = -1e30, s = 0;
        for (int64_t j = 0; j < C; ++j) m = std::max(m, double(c.in[0][size_t(r * C + j)]));
        for (int64_t j = 0; j < C; ++j) s += std::exp(c.in[0][size_t(r * C + j)] - m);
        for (int64_t j = 0; j < C; ++j) p[size_t(r * C + j)] = float(std::exp(c.in[0][size_t(r * C + j)] - m) / s);
        loss += std::log(s) + m - c.in[0][size_t(r * C + int64_t(c.in[1][size_t(r)]))];
      }
      want = {Vec{float(loss / double(R))}, p};
      return true;
    }
    case OpKind::SoftmaxCrossEntropyBackward: {
      int64_t C = c.s(n.inputs[0]).back(), R = int64_t(c.in[0].size()) / C;
      Vec dx(c.in[0].size());
      for (int64_t r = 0; r < R; ++r)
        for (int64_t j = 0; j < C; ++j)
          dx[size_t(r * C + j)] = (c.in[0][size_t(r * C + j)] - (int64_t(c.in[1][size_t(r)]) == j ? 1.f : 0.f)) /
                                  float(R);
      want = {dx};
      return true;
    }
    case OpKind::Embedding: {
      int64_t D = c.s(n.inputs[1])[1];
      Vec y(c.out[0].size());
      for (size_t r = 0; r < c.in[0].size(); ++r)
        for (int64_t d = 0; d < D; ++d) y[r * size_t(D) + size_t(d)] = c.in[1][size_t(int64_t(c.in[0][r]) * D + d)];
      want = {y};
      return true;
    }
    case OpKind::EmbeddingBackward: {
      int64_t D = c.s(n.outputs[0])[1];
      Vec dt(c.out[0].size(), 0.f);
      for (size_t r = 0; r < c.in[1].size(); ++r)
        for (int64_t d = 0; d < D; ++d) dt[size_t(int64_t(c.in[1][r]) * D + d)] += c.in[0][r * size_t(D) + size_t(d)];
      want = {dt};
      return true;
    }
    case OpKind::Dropout: {
      // The mask is the device's random draw; given it, y must be x / keep or 0.
      float keep = float(1.0 - a.rate);
      Vec y(c.in[0].size());
      for (size_t i = 0; i < y.size(); ++i) y[i] = c.out[1][i] != 0 ? c.in[0][i] / keep : 0.f;
      want = {y, c.out[1]};
      return true;
    }
    case OpKind::DropoutBackward: {
      float keep = float(1.0 - a.rate);
      Vec dx(c.in[0].size());
      for (size_t i = 0; i < dx.size(); ++i) dx[i] = c.in[1][i] != 0 ? c.in[0][i] / keep : 0.f;
      want = {dx};
      return true;
    }
    case OpKind::Mul: {
      Vec y(c.in[0].size());
      for (size_t i = 0; i < y.size(); ++i) y[i] = c.in[0][i] * c.in[1][i];
      want = {y};
      return true;
    }
    case OpKind::Concat:
    case OpKind::Split: {
      if (a.heads > 1 && n.inputs.size() == 1 && n.outputs.size() == 1) {
        // Grouped-query attention's key/value repeat (models/head_repeat.hpp: repeat_heads), written from
        // its definition rather than through models/head_repeat: query head h of the wide side
        // reads key/value head h / (heads / kv_heads); the Split of the backward sums them back.
        const bool fwd = n.kind == OpKind::Concat;
        const Shape& ws = c.s(fwd ? n.outputs[0] : n.inputs[0]);
        const Shape& ns = c.s(fwd ? n.inputs[0] : n.outputs[0]);
        const int64_t dh = ws.back() / a.heads, kv = ns.back() / dh, group = a.heads / kv;
        const int64_t rows = c.g.tensor(n.inputs[0]).desc.numel() / (fwd ? ns.back() : ws.back());
        Vec out(size_t(rows * (fwd ? ws.back() : ns.back())), 0.f);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t h = 0; h < a.heads; ++h)
            for (int64_t j = 0; j < dh; ++j) {
              const size_t wide = size_t(r * ws.back() + h * dh + j), narrow = size_t(r * ns.back() + (h / group) * dh + j);
              if (fwd) out[wide] = c.in[0][narrow];
              else out[narrow] += c.in[0][wide];
            }
        want = {out};
        return true;
      }
      // Rows of `outer` elements before the axis; each piece contributes a contiguous run.
      const std::vector<int>& pieces = n.kind == OpKind::Concat ? n.inputs : n.outputs;
      const Shape& whole = c.s(n.kind == OpKind::Concat ? n.outputs[0] : n.inputs[0]);
      int64_t outer = 1;
      for (int i = 0; i < a.axis; ++i) outer *= whole[size_t(i)];
      const Vec& all = n.kind == OpKind::Concat ? c.out[0] : c.in[0];
      int64_t row = int64_t(all.size()) / outer, off = 0;
      std::vector<Vec> parts;
      for (size_t k = 0; k < pieces.size(); ++k) {
        int64_t len = c.g.tensor(pieces[k]).desc.numel() / outer;
        Vec p(size_t(len * outer));
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t j = 0; j < len; ++j) p[size_t(o * len + j)] = all[size_t(o * row + off + j)];
        off += len;
        parts.push_back(p);
      }
      if (n.kind == OpKind::Split) {
        want = parts;
      } else {
        // Concat: rebuild the whole from the inputs the device read.
        Vec y(all.size());
        off = 0;
        for (size_t k = 0; k < c.in.size(); ++k) {
          int64_t len = int64_t(c.in[k].size()) / outer;
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t j = 0; j < len; ++j) y[size_t(o * row + off + j)] = c.in[k][size_t(o * len + j)];
          off += len;
        }
        want = {y};
      }
      return true;
    }
    case OpKind::SGDMomentumUpdate: {
      OptimizerConstants o;
      Vec w = c.in[0], v = c.in[2];
      for (size_t i = 0; i < w.size(); ++i) {
        v[i] = o.sgd_momentum * v[i] + c.in[1][i] + o.sgd_weight_decay * w[i];
        w[i] -= o.sgd_lr * v[i];
      }
      want = {w, v};
      return true;
    }
    case OpKind::LSTM: {
      // Forward recurrence on the host, Keras gate order; compares y.
      int64_t N = c.s(n.inputs[0])[0], T = a.seq_len, F = a.input_size, H = a.hidden;
      Vec h(size_t(N * H), 0.f), cs(size_t(N * H), 0.f);
      Vec y(c.out[0].size());
      for (int64_t s = 0; s < T; ++s) {
        int64_t t = a.reverse ? T - 1 - s : s;
        Vec hn(h.size()), cn(cs.size());
        for (int64_t r = 0; r < N; ++r)
          for (int64_t j = 0; j < H; ++j) {
            double z[4];
            for (int k = 0; k < 4; ++k) {
              double acc = c.in[3][size_t(k * H + j)];
              for (int64_t f = 0; f < F; ++f)
                acc += double(c.in[0][size_t((r * T + t) * F + f)]) * c.in[1][size_t(f * 4 * H + k * H + j)];
              for (int64_t q = 0; q < H; ++q) acc += double(h[size_t(r * H + q)]) * c.in[2][size_t(q * 4 * H + k * H + j)];
              z[k] = acc;
            }
            auto sg = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
            double cc = sg(z[1]) * cs[size_t(r * H + j)] + sg(z[0]) * std::tanh(z[2]);
            cn[size_t(r * H + j)] = float(cc);
            hn[size_t(r * H + j)] = float(sg(z[3]) * std::tanh(cc));
            if (a.return_sequences) y[size_t((r * T + t) * H + j)] = hn[size_t(r * H + j)];
          }
        h = hn, cs = cn;
      }
      if (!a.return_sequences) y = h;
      want = {y};
      return true;
    }
    default:
      return false;
  }
}

// Runs one training step op by op, checking each op that has a reference. Returns the kinds
// checked. Tolerance is relative to the reference's largest magnitude.
std::map<std::string, double> check_step(const OpGraph& g, double tol) {
  ReplicaOptions o;
  o.keep_step_tensors = true;
  Replica r(g, o);
  r.begin_step(1.f, false);
  std::map<std::string, double> worst;
  for (int op : g.schedule()) {
    const OpNode& n = g.op(op);
    Ctx c{g, n, {}, {}, {}};
    bool check = n.kind != OpKind::Input && n.kind != OpKind::Reshape && n.kind != OpKind::AllReduce;
    if (check)
      for (int t : n.inputs) c.in.push_back(r.download(t));
    r.run_op(op);
    if (!check) continue;
    for (int t : n.outputs) c.out.push_back(r.download(t));
    std::vector<Vec> want;
    if (!reference(c, want)) continue;
    for (size_t k = 0; k < want.size(); ++k) {
      double e = rel_err(c.out[k], want[k], k < c.scale.size() ? c.scale[k] : 0.0);
      INFO(n.name << " output " << k << " relative error " << e);
      CHECK(e < tol);
      worst[op_kind_name(n.kind)] = std::max(worst[op_kind_name(n.kind)], e);
    }
  }
  r.end_step();
  return worst;
}

OpGraph tiny_cnn(Precision p) {
  OpGraph g;
  ModelBuilder b(g, 4, p);
  int x = b.image_input(3, 9, 9);
  int y = b.labels();
  int h = b.conv(x, 8, 3, 1, 1, true, "conv1");
  h = b.batch_norm(h, "bn1");
  h = b.relu(h, "relu1");
  int r = h;
  h = b.conv(h, 8, 3, 1, 1, false, "conv2");
  h = b.add({h, r}, "res");
  h = b.max_pool(h, 3, 2, 1, "pool");
  h = b.conv(h, 6, 3, 2, 0, false, "conv3");
  h = b.activation(h, ActivationFn::sigmoid, "sig");
  h = b.flatten(h, "flat");
  h = b.dense(h, 10, true, "fc");
  b.softmax_cross_entropy(h, y, "loss");
  lower_to_training_step(g);
  return g;
}

// Global average pooling, concat, split, mul and dropout in one small step.
OpGraph tiny_mix() {
  OpGraph g;
  ModelBuilder b(g, 6, Precision::fp32);
  int x = b.image_input(3, 7, 7);
  int y = b.labels();
  int h = b.conv(x, 5, 3, 1, 1, false, "conv");
  int p = b.global_avg_pool(h, "gap");
  int d1 = b.dense(p, 12, true, "fc1");
  int d2 = b.dense(p, 4, false, "fc2");
  int cat = b.concat({d1, d2}, 1, "cat");
  int gate = b.activation(b.dense(p, 16, true, "fc3"), ActivationFn::sigmoid, "gate");
  int m = b.mul(cat, gate, "mul");
  int dr = b.dropout(m, 0.5, "drop");
  b.softmax_cross_entropy(b.dense(dr, 3, true, "out"), y, "loss");
  lower_to_training_step(g);
  return g;
}

OpGraph tiny_lstm(bool return_sequences, bool reverse) {
  OpGraph g;
  ModelBuilder b(g, 3, Precision::fp32);
  int ids = b.sequence_input("tokens", 5);
  int y = b.labels();
  int e = b.embedding(ids, 17, 4, "emb");
  int h = b.lstm(e, 6, return_sequences, reverse, "lstm");
  if (return_sequences) h = b.flatten(h, "flat");
  h = b.activation(h, ActivationFn::tanh, "tanh");
  h = b.dense(h, 5, true, "fc");
  b.softmax_cross_entropy(h, y, "loss");
  lower_to_training_step(g);
  return g;
}

// A two-block causal Transformer LM with every Transformer kind: the fused attention op in
// block 0, attention written out (reshape, rank-4 transpose, batched matmuls, scale, softmax)
// in block 1, GELU feed-forward, layer norms, and a tied LM head with a bias (the transposed-
// weight bias gradient).
// `llama_norms`: RMSNorm before attention and at the end, a bias-free LayerNorm (MPT) before
// the MLP (the norms the cuda backend refused before issue 30c).
// `kv_heads` > 0: grouped-query attention, H = 4 query heads sharing `kv_heads` key/value heads
// (the k and v projections are kv_heads x 2 wide and repeated to the query heads).
OpGraph tiny_transformer_graph(Precision p, bool llama_norms = false, int64_t kv_heads = 0) {
  const int64_t N = 2, T = 6, D = 8, H = kv_heads > 0 ? 4 : 2, V = 11, KV = kv_heads > 0 ? kv_heads : H;
  OpGraph g;
  ModelBuilder b(g, N, p);
  int ids = b.sequence_input("ids", T);
  int pos = b.sequence_input("pos", T);
  int y = b.labels(T);
  int x = b.embedding(ids, V, D, "wte");
  const int table = g.op(g.num_ops() - 1).inputs[1];
  x = b.add({x, b.embedding(pos, T, D, "wpe")}, "emb");
  for (int l = 0; l < 2; ++l) {
    const std::string n = "l" + std::to_string(l);
    int h = llama_norms ? b.layer_norm(x, n + ".ln1", 1e-5, false, true) : b.layer_norm(x, n + ".ln1");
    int q = b.dense(h, D, true, n + ".q");
    int k = b.dense(h, KV * (D / H), true, n + ".k");
    int v = b.dense(h, KV * (D / H), true, n + ".v");
    if (KV != H) {
      k = repeat_heads(b, k, D, H, n + ".k_repeat");
      v = repeat_heads(b, v, D, H, n + ".v_repeat");
    }
    int att;
    if (l == 0) {
      att = b.attention(q, k, v, H, true, n + ".attn");
    } else {
      auto heads = [&](int t, const std::string& s) {
        return b.transpose(b.reshape(t, {N, T, H, D / H}, s + ".split"), {0, 2, 1, 3}, s + ".heads");
      };
      int s = b.batch_matmul(heads(q, n + ".q"), heads(k, n + ".k"), false, true, n + ".scores");
      s = b.softmax(b.scale(s, 1.0 / std::sqrt(double(D / H)), n + ".scale"), n + ".softmax");
      int o = b.batch_matmul(s, heads(v, n + ".v"), false, false, n + ".context");
      att = b.reshape(b.transpose(o, {0, 2, 1, 3}, n + ".merge"), {N, T, D}, n + ".merged");
    }
    x = b.add({x, b.dense(att, D, true, n + ".o")}, n + ".res1");
    h = llama_norms ? b.layer_norm(x, n + ".ln2", 1e-5, false, false) : b.layer_norm(x, n + ".ln2");
    h = b.dense(b.activation(b.dense(h, 2 * D, true, n + ".fc1"), ActivationFn::gelu, n + ".gelu"), D, true,
                n + ".fc2");
    x = b.add({x, h}, n + ".res2");
  }
  x = llama_norms ? b.layer_norm(x, "ln_f", 1e-5, false, true) : b.layer_norm(x, "ln_f");
  b.softmax_cross_entropy(b.dense_with(x, table, true, true, "lm_head"), y, "loss");
  lower_to_training_step(g);
  return g;
}

}  // namespace

TEST_CASE("every Transformer op of a tiny causal LM step matches the host reference", "[gpu]") {
  auto worst = check_step(tiny_transformer_graph(Precision::fp32), 2e-3);
  for (const char* k : {"layer_norm", "layer_norm_backward", "attention", "attention_backward", "softmax",
                        "softmax_backward", "transpose", "scale", "matmul", "activation", "activation_backward"})
    CHECK(worst.count(k) == 1);
}

TEST_CASE("RMSNorm and bias-free LayerNorm match the host reference", "[gpu]") {
  auto worst = check_step(tiny_transformer_graph(Precision::fp32, true), 2e-3);
  CHECK(worst.count("layer_norm") == 1);
  CHECK(worst.count("layer_norm_backward") == 1);
  check_step(tiny_transformer_graph(Precision::mixed_bf16, true), 6e-2);
}

TEST_CASE("grouped- and multi-query attention (kv_heads < heads) match the host reference", "[gpu]") {
  for (int64_t kv : {2, 1}) {  // 4 query heads over 2 key/value heads (GQA), over 1 (MQA)
    INFO("kv_heads " << kv);
    auto worst = check_step(tiny_transformer_graph(Precision::fp32, true, kv), 2e-3);
    CHECK(worst.count("concat") == 1);  // the repeat and the gradient's sum over the group
    CHECK(worst.count("split") == 1);
    CHECK(worst.count("attention") == 1);
    CHECK(worst.count("attention_backward") == 1);
  }
  check_step(tiny_transformer_graph(Precision::mixed_bf16, true, 2), 6e-2);
}

TEST_CASE("a llama-style model with grouped-query attention trains on the cuda backend", "[gpu]") {
  // The zoo's Llama layout (RMSNorm, SwiGLU, rotary positions, untied head, 4 query heads over
  // 2 key/value heads) at tiny_transformer's size: the cuda backend refused its key/value
  // repeat before issue 30d. On one fixed batch its loss must fall.
  const std::string path = (std::filesystem::temp_directory_path() / "xpusim_gpu_tiny_llama_gqa.yaml").string();
  {
    std::ofstream f(path);
    f << "name: tiny_llama_gqa\nfamily: transformer\ndataset: openwebtext\ntask: sequence\ninput: [16]\n"
         "classes: 64\noptimizer: adam\nparams:\n  vocab: 64\n  hidden: 32\n  layers: 2\n  heads: 4\n"
         "  kv_heads: 2\n  ffn: 64\n  max_positions: 16\n  type_vocab: 0\n  causal: true\n  pre_norm: true\n"
         "  final_norm: true\n  pooler: false\n  head: lm\n  norm: rms_norm\n  mlp: swiglu\n  position: rotary\n"
         "  bias: false\n  tied_embeddings: false\n  dropout: 0.0\n  layer_norm_eps: 1.0e-5\n";
  }
  StepReport rep = predict(cuda_run(path, 8, "fp32", 30, 0));
  std::filesystem::remove(path);
  INFO("loss " << rep.extra["loss_first"] << " -> " << rep.extra["loss_last"]);
  CHECK(rep.extra["loss_last"].get<double>() < rep.extra["loss_first"].get<double>());
}

TEST_CASE("the tiny Transformer step under mixed fp16 and bf16 matches within low-precision tolerance", "[gpu]") {
  check_step(tiny_transformer_graph(Precision::mixed_fp16), 3e-2);
  check_step(tiny_transformer_graph(Precision::mixed_bf16), 6e-2);
}

TEST_CASE("training the zoo's tiny Transformer on one fixed batch lowers its loss", "[gpu]") {
  PredictRequest r = cuda_run("tiny_transformer", 8, "mixed_fp16", 30, 0);
  StepReport rep = predict(r);
  INFO("loss " << rep.extra["loss_first"] << " -> " << rep.extra["loss_last"]);
  CHECK(rep.extra["loss_last"].get<double>() < rep.extra["loss_first"].get<double>());
}

TEST_CASE("every op of a small CNN step matches the host reference (fp32)", "[gpu]") {
  auto worst = check_step(tiny_cnn(Precision::fp32), 2e-3);
  for (const char* k : {"conv2d", "conv2d_backward_data", "conv2d_backward_filter", "matmul", "batch_norm",
                        "activation", "activation_backward", "pool", "add", "softmax_cross_entropy",
                        "softmax_cross_entropy_backward", "sgd_momentum_update"})
    CHECK(worst.count(k) == 1);
}

TEST_CASE("small CNN step under mixed fp16 matches within half-precision tolerance", "[gpu]") {
  check_step(tiny_cnn(Precision::mixed_fp16), 3e-2);
}

TEST_CASE("global pooling, concat, split, mul and dropout match the host reference", "[gpu]") {
  auto worst = check_step(tiny_mix(), 2e-3);
  for (const char* k : {"pool", "concat", "split", "mul", "dropout", "dropout_backward"}) CHECK(worst.count(k) == 1);
}

TEST_CASE("LSTM forward and embedding match the host reference", "[gpu]") {
  for (bool seq : {false, true})
    for (bool rev : {false, true}) {
      auto worst = check_step(tiny_lstm(seq, rev), 2e-3);
      CHECK(worst.count("lstm") == 1);
      CHECK(worst.count("embedding") == 1);
      CHECK(worst.count("embedding_backward") == 1);
    }
}

TEST_CASE("training a zoo model on one fixed batch lowers its loss", "[gpu]") {
  for (const char* prec : {"fp32", "mixed_fp16"}) {
    PredictRequest r = cuda_run("mnist_mlp", 64, prec, 30, 0);
    StepReport rep = predict(r);
    INFO(prec << ": loss " << rep.extra["loss_first"] << " -> " << rep.extra["loss_last"]);
    CHECK(rep.extra["loss_last"].get<double>() < rep.extra["loss_first"].get<double>());
    CHECK(rep.step_time_s > 0);
    CHECK(rep.extra["gpu_memory_peak_bytes"].get<int64_t>() > 0);
    CHECK_FALSE(rep.extra["gpu_name"].get<std::string>().empty());
  }
}

TEST_CASE("--task inference runs forward passes only, in less memory than training", "[gpu]") {
  for (const char* prec : {"fp32", "mixed_fp16"}) {
    PredictRequest r = cuda_run("mnist_cnn", 64, prec, 5, 1);
    StepReport train = predict(r);
    r.task = Task::inference;
    StepReport inf = predict(r);
    INFO(prec);
    CHECK(inf.task == Task::inference);
    CHECK(inf.step_time_s > 0);
    CHECK_FALSE(inf.extra.contains("loss_first"));
    CHECK(inf.per_op_s.count("conv2d") == 1);
    CHECK(inf.per_op_s.count("conv2d_backward_data") == 0);
    CHECK(inf.per_op_s.count("adam_update") == 0);  // mnist_cnn trains with adam
    CHECK(train.per_op_s.count("adam_update") == 1);
    CHECK(inf.memory_bytes < train.memory_bytes);
  }
}

TEST_CASE("data parallel over two GPUs trains and reports both", "[gpu]") {
  int n = 0;
  cudaGetDeviceCount(&n);
  if (n < 2) {
    WARN("one GPU only: the NCCL data-parallel path is not exercised here");
    return;
  }
  PredictRequest r = cuda_run("mnist_cnn", 32, "fp32", 20, 0, 2);
  StepReport rep = predict(r);
  CHECK(rep.global_batch == 64);
  CHECK(rep.extra["gpu_count"].get<int>() == 2);
  CHECK(rep.per_op_s.count("all_reduce") == 1);
  CHECK(rep.extra["loss_last"].get<double>() < rep.extra["loss_first"].get<double>());
}

TEST_CASE("a batch beyond the GPU's memory is a clear error, not a crash", "[gpu]") {
  // Batch 4096: conv1 alone needs 52 GB of fp32 output, more than any one GPU has with the rest.
  PredictRequest r = cuda_run("vgg16", 4096, "fp32", 1, 0);
  CHECK_THROWS_WITH(predict(r), Catch::Contains("out of GPU memory") && Catch::Contains("bytes free of"));
}
