// cpu executor behaviour beyond gradients: optimizer and all-reduce formulas, bf16
// rounding, the memory plan, reproducibility, loss falling on a fixed batch, the engine
// report, and the Fashion-MNIST trainer's error paths.
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/error.hpp"
#include "devices/cpu/runner.hpp"
#include "devices/cpu/trainer.hpp"
#include "models/zoo.hpp"
#include "predict/predict.hpp"
#include "tests/unit/cpu/cpu_request.hpp"
#include "tests/unit/cpu/gradcheck_util.hpp"

using namespace xpusim;
using namespace xpusim::cpu;
using namespace xpusim::cpu::test;

namespace {

void mlp(ModelBuilder& b) {
  int x = b.image_input(1, 4, 4);
  int labels = b.labels();
  int y = b.relu(b.dense(b.flatten(x, "flat"), 8, true, "d1"), "r1");
  b.softmax_cross_entropy(b.dense(y, 3, true, "d2"), labels, "loss");
}

std::vector<float> copy_of(Harness& h, int t) {
  return std::vector<float>(h.ex->data(t), h.ex->data(t) + h.g.tensor(t).desc.numel());
}

OpGraph small_cnn(int64_t batch, Precision p = Precision::fp32) {
  GraphOptions o;
  o.batch = batch;
  o.precision = p;
  return build_graph(find_model("fashion_cnn"), o);
}

std::vector<float> all_weights(const OpGraph& g, Executor& ex) {
  std::vector<float> out;
  for (int t : g.tensors_with_role(TensorRole::weight))
    out.insert(out.end(), ex.data(t), ex.data(t) + g.tensor(t).desc.numel());
  return out;
}

}  // namespace

TEST_CASE("sgd momentum update follows v = mu v + g, w -= lr v", "[cpu]") {
  Harness h(mlp, 4);
  int w = h.g.tensors_with_role(TensorRole::weight)[0];
  int gt = gradient_of(h.g, w);
  auto w0 = copy_of(h, w);
  h.ex->step();
  auto g1 = copy_of(h, gt);
  auto w1 = copy_of(h, w);
  // First step: v = g, so w1 = w0 - lr g (lr 0.01, mu 0.9 defaults).
  for (size_t k = 0; k < w0.size(); ++k) CHECK(w1[k] == Approx(w0[k] - 0.01f * g1[k]).margin(1e-7));
  h.ex->step();
  auto g2 = copy_of(h, gt);
  auto w2 = copy_of(h, w);
  for (size_t k = 0; k < w0.size(); ++k) CHECK(w2[k] == Approx(w1[k] - 0.01f * (0.9f * g1[k] + g2[k])).margin(1e-6));
}

TEST_CASE("adam's first step moves each weight by lr * sign(g)", "[cpu]") {
  Harness h(mlp, 4, 3, Optimizer::adam);
  int w = h.g.tensors_with_role(TensorRole::weight)[0];
  auto w0 = copy_of(h, w);
  h.ex->step();
  auto g = copy_of(h, gradient_of(h.g, w));
  auto w1 = copy_of(h, w);
  int moved = 0;
  for (size_t k = 0; k < w0.size(); ++k) {
    if (std::abs(g[k]) < 1e-5f) continue;  // eps 1e-8 matters only for tiny gradients
    CHECK(w1[k] - w0[k] == Approx(g[k] > 0 ? -0.01f : 0.01f).epsilon(1e-3));
    ++moved;
  }
  CHECK(moved > 0);
}

TEST_CASE("all-reduce over one replica is the identity; more replicas are refused", "[cpu]") {
  Harness h(mlp, 4, 3, Optimizer::sgd_momentum, 2);
  int ar = -1;
  for (int i = 0; i < h.g.num_ops(); ++i)
    if (h.g.op(i).kind == OpKind::AllReduce) ar = i;
  REQUIRE(ar >= 0);
  h.ex->forward();
  CHECK_THROWS_AS(h.ex->backward(), UnavailableError);
  for (int i = 0; i < h.g.num_ops(); ++i)
    if (h.g.op(i).kind == OpKind::AllReduce) h.g.op_mut(i).attrs.replicas = 1;
  h.ex->backward();
  const OpNode& op = h.g.op(ar);
  auto in = copy_of(h, op.inputs[0]), out = copy_of(h, op.outputs[0]);
  CHECK(in == out);
  CHECK(std::any_of(in.begin(), in.end(), [](float v) { return v != 0; }));
}

TEST_CASE("bf16 rounding is round-to-nearest-even on the top 16 bits", "[cpu]") {
  // bf16 keeps 7 explicit mantissa bits, so 1 + 2^-7 is exact; 1 + 2^-8 is a tie between
  // 1 and 1 + 2^-7 and goes to the even one (1); 1 + 3*2^-8 is a tie between 1 + 2^-7 (odd)
  // and 1 + 2^-6 (even) and goes up.
  float v[] = {1.0f + 0x1p-7f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -2.5f, 1.0f + 0x1p-8f + 0x1p-20f};
  round_to_bf16(v, 5);
  CHECK(v[0] == 1.0f + 0x1p-7f);
  CHECK(v[1] == 1.0f);
  CHECK(v[2] == 1.0f + 0x1p-6f);
  CHECK(v[3] == -2.5f);
  CHECK(v[4] == 1.0f + 0x1p-7f);  // just above the tie: up
}

TEST_CASE("bf16 executor stores activations as bf16 values and keeps fp32 master weights", "[cpu]") {
  OpGraph g = small_cnn(4, Precision::bf16);
  ExecOptions o;
  o.threads = 2;
  o.plan_memory = false;  // shared blocks would later hold fp32 gradients
  Executor ex(g, o);
  ex.fill_synthetic();
  ex.step();
  ex.step();
  int low_bits_acts = 0, low_bits_weights = 0;
  for (int t = 0; t < g.num_tensors(); ++t) {
    const Tensor& T = g.tensor(t);
    uint32_t acc = 0;
    for (int64_t k = 0; k < std::min<int64_t>(64, T.desc.numel()); ++k) {
      uint32_t u;
      std::memcpy(&u, ex.data(t) + k, 4);
      acc |= u & 0xffffu;
    }
    if (T.role == TensorRole::activation && T.desc.dtype == DType::bf16) low_bits_acts += acc != 0;
    if (T.role == TensorRole::weight) low_bits_weights += acc != 0;
  }
  CHECK(low_bits_acts == 0);
  CHECK(low_bits_weights > 0);  // updates accumulate in fp32
}

TEST_CASE("memory plan shares buffers without changing results", "[cpu]") {
  OpGraph g = small_cnn(8);
  ExecOptions shared, separate;
  shared.threads = separate.threads = 2;
  separate.plan_memory = false;
  Executor a(g, shared), b(g, separate);
  a.fill_synthetic();
  b.fill_synthetic();
  for (int s = 0; s < 2; ++s) {
    a.step();
    b.step();
  }
  CHECK(a.loss() == b.loss());
  CHECK(all_weights(g, a) == all_weights(g, b));
  CHECK(a.buffer_bytes() < b.buffer_bytes());
}

TEST_CASE("same seed and thread count give bit-identical training; another seed differs", "[cpu]") {
  OpGraph g = small_cnn(8);
  auto run = [&](uint64_t seed) {
    ExecOptions o;
    o.seed = seed;
    o.threads = 2;
    Executor ex(g, o);
    ex.fill_synthetic();
    for (int s = 0; s < 3; ++s) ex.step();
    return all_weights(g, ex);
  };
  auto a = run(7), b = run(7), c = run(8);
  CHECK(a == b);
  CHECK(a != c);
}

TEST_CASE("loss falls when training on one fixed batch", "[cpu]") {
  OpGraph g = small_cnn(8);
  ExecOptions o;
  o.threads = 2;
  Executor ex(g, o);
  ex.fill_synthetic();
  ex.step();
  const float first = ex.loss();
  for (int s = 0; s < 30; ++s) ex.step();
  ex.forward(false);
  INFO("first " << first << " last " << ex.loss());
  CHECK(first > 1.5f);             // ~ln(10) for random labels
  CHECK(ex.loss() < 0.5f * first);  // memorised
}

TEST_CASE("cpu engine reports timing, per-op seconds and peak RSS", "[cpu]") {
  PredictRequest r = test::cpu_run_request("fashion_cnn", 4, 2, 1, 1);
  StepReport rep = predict(r);
  CHECK(rep.engine == "cpu");
  CHECK(rep.step_time_s > 0);
  CHECK(rep.throughput_samples_per_s == Approx(4 / rep.step_time_s));
  CHECK(rep.per_op_s.count("conv2d") == 1);
  CHECK(rep.extra["per_op"].size() == rep.per_op_s.size());
  CHECK(rep.extra["peak_rss_bytes"].get<int64_t>() > rep.memory_bytes);
  r.precision = "mixed_fp16";
  CHECK_THROWS_AS(predict(r), UserError);
}

TEST_CASE("trainer names the Debian package when the dataset is missing", "[cpu]") {
  TrainOptions o;
  o.data_dir = "/nonexistent-xpusim-dir";
  o.progress = false;
  try {
    train_fashion_mnist(o);
    FAIL("no error");
  } catch (const UnavailableError& e) {
    CHECK(std::string(e.what()).find("dataset-fashion-mnist") != std::string::npos);
  }
  o.dataset = "mnist";
  CHECK_THROWS_AS(train_fashion_mnist(o), UserError);
}

namespace {

// An IDX pair PREFIX-{images-idx3,labels-idx1}-ubyte.gz in `dir`, uncompressed: zlib's gzread
// reads a plain file as it is. `pixels` may disagree with the header (a damaged file).
void write_idx(const std::string& dir, const std::string& prefix, uint32_t count, uint32_t rows, uint32_t cols,
               size_t pixels) {
  auto be = [](std::string& s, uint32_t v) {
    for (int k = 3; k >= 0; --k) s.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
  };
  std::string img, lab;
  be(img, 0x803), be(img, count), be(img, rows), be(img, cols);
  img.append(pixels, '\x40');
  be(lab, 0x801), be(lab, count);
  for (uint32_t i = 0; i < count; ++i) lab.push_back(static_cast<char>(i % 10));
  std::ofstream(dir + "/" + prefix + "-images-idx3-ubyte.gz", std::ios::binary) << img;
  std::ofstream(dir + "/" + prefix + "-labels-idx1-ubyte.gz", std::ios::binary) << lab;
}

// mnist_mlp on the IDX files in DIR: batch 4, one thread, EPOCHS epochs, no progress bar.
TrainOptions tiny_idx_run(const std::string& dir, int epochs) {
  TrainOptions o;
  o.model = "mnist_mlp";
  o.data_dir = dir;
  o.batch = 4;
  o.epochs_max = epochs;
  o.threads = 1;
  o.progress = false;
  return o;
}

std::string train_error(const std::string& dir) {
  TrainOptions o = tiny_idx_run(dir, 1);
  try {
    train_fashion_mnist(o);
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

// Issue 16, a --data-dir of other IDX files: images of another size were copied past the
// model's 28x28 input (a heap overflow that exited 0), a header whose dimensions multiply
// past int64 "matched" a 16-byte file and crashed, an empty test set gave accuracy 0/0.
TEST_CASE("trainer refuses IDX files that do not fit the model or their own header", "[cpu][reliability]") {
  const std::string dir = (std::filesystem::temp_directory_path() / ("xpusim_idx_" + std::to_string(getpid()))).string();
  std::filesystem::create_directories(dir);
  write_idx(dir, "train", 64, 40, 40, 64 * 40 * 40);
  write_idx(dir, "t10k", 8, 40, 40, 8 * 40 * 40);
  CHECK_THAT(train_error(dir), Catch::Contains("training images are 40x40, mnist_mlp takes 28x28"));
  write_idx(dir, "train", 64, 28, 28, 64 * 28 * 28);
  CHECK_THAT(train_error(dir), Catch::Contains("test images are 40x40"));
  write_idx(dir, "t10k", 0, 28, 28, 0);
  CHECK_THAT(train_error(dir), Catch::Contains("the test set (t10k) holds no images"));
  write_idx(dir, "t10k", 4, 2147483648u, 2147483648u, 0);  // 4 x 2^31 x 2^31 = 2^64
  CHECK_THAT(train_error(dir), Catch::Contains("t10k-images-idx3-ubyte.gz: image size: too large"));
  write_idx(dir, "t10k", 8, 28, 28, 8 * 28 * 28 - 1);
  CHECK_THAT(train_error(dir), Catch::Contains("holds 6271 pixel bytes, its header says 8 images of 28x28"));
  write_idx(dir, "t10k", 8, 0, 28, 0);
  CHECK_THAT(train_error(dir), Catch::Contains("images of 0x28 pixels"));
  write_idx(dir, "t10k", 8, 28, 28, 8 * 28 * 28);  // now valid: training runs
  CHECK(train_error(dir) == "no error");
  std::filesystem::remove_all(dir);
}

// The stop path of Ctrl-C (the CLI's signal handler sets the flag) with no finished epoch:
// the result says where it stopped, the log keeps its header, nothing is left half done.
// Runs under ASan in CI on a tiny IDX dataset (no Fashion-MNIST package needed).
TEST_CASE("trainer stopped before its first step reports where and keeps the log header", "[cpu][reliability]") {
  const std::string dir = (std::filesystem::temp_directory_path() / ("xpusim_stop_" + std::to_string(getpid()))).string();
  std::filesystem::create_directories(dir);
  write_idx(dir, "train", 64, 28, 28, 64 * 28 * 28);
  write_idx(dir, "t10k", 8, 28, 28, 8 * 28 * 28);
  std::atomic<bool> stop{true};
  TrainOptions o = tiny_idx_run(dir, 3);
  o.log_path = dir + "/log.tsv";
  o.stop = &stop;
  TrainResult r = train_fashion_mnist(o);
  CHECK(r.interrupted);
  CHECK(r.stopped_epoch == 1);
  CHECK(r.stopped_step == 0);
  CHECK(r.epochs.empty());
  CHECK_FALSE(r.reached_target);
  std::ifstream log(o.log_path);
  std::string all((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  CHECK(all == "epoch\tseconds\ttrain_loss\ttest_accuracy\n");
  // Not stopped: the same options train all three epochs.
  stop = false;
  o.overwrite_log = true;
  r = train_fashion_mnist(o);
  CHECK_FALSE(r.interrupted);
  CHECK(r.epochs.size() == 3);
  std::filesystem::remove_all(dir);
}

TEST_CASE("trainer stops on a non-finite loss and names the epoch", "[cpu][train]") {
  TrainOptions o;
  o.train_limit = 640;
  o.lr = 1e6;
  o.threads = 2;
  o.progress = false;
  try {
    train_fashion_mnist(o);
    FAIL("no error");
  } catch (const UserError& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find("at epoch 1") != std::string::npos);
  }
}

TEST_CASE("short Fashion-MNIST training reaches a lowered target", "[cpu][train]") {
  TrainOptions o;
  o.train_limit = 6000;
  o.test_limit = 2000;
  o.epochs_max = 2;
  o.target_accuracy = 0.70;
  o.threads = 2;
  o.progress = false;
  TrainResult r = train_fashion_mnist(o);
  INFO("accuracy " << r.epochs.back().test_accuracy);
  CHECK(r.reached_target);
  CHECK(r.epochs.front().train_loss < 2.3);
}
