// cpu executor on the Transformer op kinds, beyond gradient consistency (which
// test_cpu_gradcheck.cpp checks): forward values against naive reference loops, training
// of the zoo's tiny_transformer (loss falls on a fixed batch, fp32 and bf16), the memory plan,
// and the engine report of `xpusim run --backend cpu --model tiny_transformer`.
#include <cmath>

#include "devices/cpu/executor.hpp"
#include "models/zoo.hpp"
#include "predict/predict.hpp"
#include "tests/unit/cpu/cpu_request.hpp"
#include "tests/unit/cpu/gradcheck_util.hpp"

using namespace xpusim;
using namespace xpusim::cpu;
using namespace xpusim::cpu::test;

namespace {

struct Net {
  int x = -1, ln = -1, q = -1, k = -1, v = -1, causal = -1, full = -1, bmm = -1, bmm_tt = -1, tr = -1, gelu = -1,
      sm = -1, sc = -1;
};
Net net;

// Every forward kind on [N, 3, 4] activations, two heads of width 2.
void forward_net(ModelBuilder& b) {
  int ids = b.sequence_input("ids", 3);
  int labels = b.labels(3);
  net.x = b.embedding(ids, 5, 4, "emb");
  net.ln = b.layer_norm(net.x, "ln", 1e-5);
  net.q = b.dense(net.ln, 4, true, "q");
  net.k = b.dense(net.ln, 4, true, "k");
  net.v = b.dense(net.ln, 4, true, "v");
  net.causal = b.attention(net.q, net.k, net.v, 2, true, "causal");
  net.full = b.attention(net.q, net.k, net.v, 2, false, "full");
  net.bmm = b.batch_matmul(net.q, net.k, false, true, "qkT");        // [N,3,3]
  net.bmm_tt = b.batch_matmul(net.q, net.bmm, true, true, "tt");     // q^T bmm^T: [N,4,3]
  net.tr = b.transpose(net.bmm_tt, {2, 0, 1}, "tr");                  // [3,N,4]
  net.sm = b.softmax(net.bmm, "sm");
  net.sc = b.scale(net.sm, -1.5, "sc");
  net.gelu = b.activation(net.full, ActivationFn::gelu, "gelu");
  int y = b.add({net.gelu, net.causal, b.reshape(net.tr, Shape{2, 3, 4}, "r")}, "sum");
  y = b.add({y, b.batch_matmul(net.sc, net.v, false, false, "sv")}, "sum2");
  b.softmax_cross_entropy(b.dense(y, 5, false, "out"), labels, "loss");
}

// Naive multi-head attention on [N, T, D] (the definition, not the kernel's formulation).
std::vector<float> naive_attention(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                                   int64_t n, int64_t t, int64_t d, int64_t heads, bool causal) {
  const int64_t dh = d / heads;
  std::vector<float> y(static_cast<size_t>(n * t * d));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < t; ++i) {
        std::vector<double> s(static_cast<size_t>(t));
        double mx = -1e300;
        for (int64_t j = 0; j < t; ++j) {
          double acc = 0;
          for (int64_t c = 0; c < dh; ++c) acc += q[(b * t + i) * d + h * dh + c] * k[(b * t + j) * d + h * dh + c];
          s[j] = (causal && j > i) ? -1e300 : acc / std::sqrt(static_cast<double>(dh));
          mx = std::max(mx, s[j]);
        }
        double z = 0;
        for (double& e : s) z += (e = (e <= -1e299 ? 0.0 : std::exp(e - mx)));
        for (int64_t c = 0; c < dh; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < t; ++j) acc += s[j] / z * v[(b * t + j) * d + h * dh + c];
          y[(b * t + i) * d + h * dh + c] = static_cast<float>(acc);
        }
      }
  return y;
}

void check_close(const std::vector<float>& got, const std::vector<float>& want, double tol = 1e-5) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i])));
  }
}

GraphOptions tiny_options(int64_t batch, Precision p = Precision::fp32) {
  GraphOptions o;
  o.batch = batch;
  o.precision = p;
  o.training_options.optimizer = Optimizer::adam;  // the model's recipe (as `run` uses it)
  return o;
}

// Loss after each of `steps` steps on one synthetic batch (the `run` command's data).
std::vector<float> train_fixed_batch(Precision p, int steps, bool plan_memory = true) {
  OpGraph g = build_graph(find_model("tiny_transformer"), tiny_options(8, p));
  ExecOptions o;
  o.threads = 2;
  o.plan_memory = plan_memory;
  o.bf16_path = Bf16Path::emulated;  // the path every CPU has (bf16 graphs only)
  Executor ex(g, o);
  ex.fill_synthetic();
  std::vector<float> losses;
  for (int s = 0; s < steps; ++s) {
    ex.step();
    losses.push_back(ex.loss());
  }
  return losses;
}

// GELU between batch norm and a convolution on 16 channels: its tensors are stored
// channel-blocked (choose_layouts' elementwise groups), so GELU forward and its src-based
// backward run on blocked operands.
void gelu_conv_net(ModelBuilder& b) {
  int x = b.image_input(3, 5, 5);
  int labels = b.labels();
  int y = b.activation(b.batch_norm(b.conv(x, 16, 3, 1, 1, false, "c1"), "bn"), ActivationFn::gelu, "gelu");
  y = b.global_avg_pool(b.conv(y, 4, 3, 1, 1, true, "c2"), "gap");
  b.softmax_cross_entropy(b.dense(y, 3, true, "d"), labels, "loss");
}

}  // namespace

TEST_CASE("gelu gradients on channel-blocked tensors; transformer tensors stay plain", "[cpu][transformer]") {
  Harness h(gelu_conv_net, 2);
  int gelu_in = -1;
  for (int i = 0; i < h.g.num_ops(); ++i)
    if (h.g.op(i).kind == OpKind::Activation) gelu_in = h.g.op(i).inputs[0];
  REQUIRE(gelu_in >= 0);
  CHECK(h.ex->stored_blocked(gelu_in));
  check_all_weight_gradients(h);
  // Layer norm, attention, softmax and transpose read plain storage: none of their tensors
  // is blocked (they are 3-D and not conv / batch-norm arguments).
  OpGraph g = build_graph(find_model("tiny_transformer"), tiny_options(2));
  ExecOptions o;
  o.threads = 1;
  Executor ex(g, o);
  for (int t = 0; t < g.num_tensors(); ++t) CHECK_FALSE(ex.stored_blocked(t));
}

TEST_CASE("transformer forward ops match naive reference loops", "[cpu][transformer]") {
  Harness h(forward_net, 2);
  h.ex->forward(true);
  auto rd = [&](int t) { return h.ex->read(t); };
  const int64_t n = 2, t = 3, d = 4;
  // Layer norm with gamma = 1, beta = 0 (the initialisation): each row has mean 0, variance 1.
  {
    auto x = rd(net.x), y = rd(net.ln);
    for (int64_t r = 0; r < n * t; ++r) {
      double mu = 0, var = 0;
      for (int64_t j = 0; j < d; ++j) mu += x[r * d + j];
      mu /= d;
      for (int64_t j = 0; j < d; ++j) var += (x[r * d + j] - mu) * (x[r * d + j] - mu);
      var /= d;
      for (int64_t j = 0; j < d; ++j)
        CHECK(y[r * d + j] == Approx((x[r * d + j] - mu) / std::sqrt(var + 1e-5)).epsilon(1e-4));
    }
  }
  auto q = rd(net.q), k = rd(net.k), v = rd(net.v);
  check_close(rd(net.causal), naive_attention(q, k, v, n, t, d, 2, true));
  check_close(rd(net.full), naive_attention(q, k, v, n, t, d, 2, false));
  // The first query of a causal head sees only the first key: its output is that key's value.
  {
    auto y = rd(net.causal);
    for (int64_t c = 0; c < d; ++c) CHECK(y[c] == Approx(v[c]).epsilon(1e-5));
  }
  // Batched matmuls: bmm = q k^T per sample; tt = q^T bmm^T per sample.
  auto bmm = rd(net.bmm), tt = rd(net.bmm_tt), tr = rd(net.tr);
  std::vector<float> want_bmm(bmm.size()), want_tt(tt.size()), want_tr(tr.size());
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t i = 0; i < t; ++i)
      for (int64_t j = 0; j < t; ++j) {
        double acc = 0;
        for (int64_t c = 0; c < d; ++c) acc += q[(b * t + i) * d + c] * k[(b * t + j) * d + c];
        want_bmm[(b * t + i) * t + j] = static_cast<float>(acc);
      }
    for (int64_t i = 0; i < d; ++i)  // tt[b, i, j] = sum_c q[b, c, i] bmm[b, j, c]
      for (int64_t j = 0; j < t; ++j) {
        double acc = 0;
        for (int64_t c = 0; c < t; ++c) acc += q[(b * t + c) * d + i] * want_bmm[(b * t + j) * t + c];
        want_tt[(b * d + i) * t + j] = static_cast<float>(acc);
      }
  }
  check_close(bmm, want_bmm);
  check_close(tt, want_tt, 1e-4);
  // Transpose perm {2, 0, 1}: tr[j, b, i] = tt[b, i, j].
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < d; ++i)
      for (int64_t j = 0; j < t; ++j) want_tr[(j * n + b) * d + i] = tt[(b * d + i) * t + j];
  check_close(tr, want_tr, 0);
  // Softmax rows, scale, exact GELU x Phi(x).
  auto sm = rd(net.sm), sc = rd(net.sc), full = rd(net.full), ge = rd(net.gelu);
  for (int64_t r = 0; r < n * t; ++r) {
    double mx = -1e30, z = 0;
    for (int64_t j = 0; j < t; ++j) mx = std::max<double>(mx, bmm[r * t + j]);
    for (int64_t j = 0; j < t; ++j) z += std::exp(bmm[r * t + j] - mx);
    for (int64_t j = 0; j < t; ++j) {
      CHECK(sm[r * t + j] == Approx(std::exp(bmm[r * t + j] - mx) / z).epsilon(1e-5));
      CHECK(sc[r * t + j] == Approx(-1.5 * sm[r * t + j]).epsilon(1e-6));
    }
  }
  for (size_t i = 0; i < full.size(); ++i)
    CHECK(ge[i] == Approx(0.5 * full[i] * (1 + std::erf(full[i] / std::sqrt(2.0)))).margin(1e-6).epsilon(1e-5));
}

TEST_CASE("tiny_transformer: loss falls on a fixed batch (fp32)", "[cpu][transformer]") {
  auto l = train_fixed_batch(Precision::fp32, 12);
  INFO("first " << l.front() << " last " << l.back());
  CHECK(std::abs(l.front() - std::log(64.0)) < 0.5);  // ~ln(vocab) for random next tokens
  CHECK(l.back() < 0.6 * l.front());
  for (size_t s = 1; s < l.size(); ++s) CHECK(l[s] < l[s - 1]);  // every Adam step lowers it here
}

TEST_CASE("tiny_transformer: bf16 (emulated) trains and the memory plan changes nothing", "[cpu][transformer]") {
  auto l = train_fixed_batch(Precision::bf16, 8);
  INFO("first " << l.front() << " last " << l.back());
  CHECK(std::isfinite(l.back()));
  CHECK(l.back() < 0.8 * l.front());
  CHECK(train_fixed_batch(Precision::fp32, 3, true) == train_fixed_batch(Precision::fp32, 3, false));
}

TEST_CASE("cpu engine runs tiny_transformer and reports the ISA and falling loss", "[cpu][transformer]") {
  StepReport rep = predict(test::cpu_run_request("tiny_transformer", 8, 5, 0, 2));
  CHECK(rep.extra["isa"].get<std::string>() == cpu_isa_name());
  CHECK(rep.step_time_s > 0);
  for (const char* k : {"attention", "attention_backward", "layer_norm", "layer_norm_backward", "matmul"})
    CHECK(rep.per_op_s.count(k) == 1);
  const double first = rep.extra["loss_first"].get<double>(), last = rep.extra["loss_last"].get<double>();
  INFO("loss first " << first << " last " << last);
  CHECK(last < 0.9 * first);
}
