#include "devices/cpu/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>

#include "common/error.hpp"
#include "common/progress.hpp"
#include "common/file_guard.hpp"
#include "devices/cpu/checkpoint.hpp"
#include "devices/cpu/cpu_engine.hpp"
#include "devices/cpu/executor.hpp"
#include "devices/cpu/fashion_mnist.hpp"
#include "models/zoo.hpp"

namespace xpusim::cpu {

namespace {

struct Feed {
  int images = -1, labels = -1;
};

Feed find_feed(const OpGraph& g) {
  Feed f;
  for (int i = 0; i < g.num_ops(); ++i)
    if (g.op(i).kind == OpKind::Input)
      for (int t : g.op(i).outputs) {
        if (g.tensor(t).role == TensorRole::input) f.images = t;
        if (g.tensor(t).role == TensorRole::label) f.labels = t;
      }
  return f;
}

// Copies images [first, first + n) of `order` into the input tensors, normalised with the
// training set's mean and standard deviation; rows past the end are zero (padding).
void load_batch(Executor& ex, const Feed& f, const ImageSet& s, const std::vector<int64_t>& order, int64_t first,
                int64_t batch, float mean, float inv_std) {
  const int64_t px = s.rows * s.cols;
  float* x = ex.data(f.images);
  float* y = ex.data(f.labels);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t k = first + b;
    if (k >= static_cast<int64_t>(order.size())) {
      std::fill(x + b * px, x + (b + 1) * px, 0.0f);
      y[b] = 0;
      continue;
    }
    const int64_t idx = order[static_cast<size_t>(k)];
    const uint8_t* src = s.pixels.data() + idx * px;
    for (int64_t p = 0; p < px; ++p) x[b * px + p] = (static_cast<float>(src[p]) / 255.0f - mean) * inv_std;
    y[b] = s.labels[static_cast<size_t>(idx)];
  }
}

double test_accuracy(Executor& ex, const Feed& f, const ImageSet& test, int64_t count, int64_t batch, float mean,
                     float inv_std) {
  std::vector<int64_t> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), 0);
  int64_t correct = 0;
  const float* probs = ex.data(ex.probs_tensor());
  for (int64_t first = 0; first < count; first += batch) {
    load_batch(ex, f, test, order, first, batch, mean, inv_std);
    ex.forward(false);
    for (int64_t b = 0; b < batch && first + b < count; ++b) {
      const float* p = probs + b * 10;
      int64_t best = std::max_element(p, p + 10) - p;
      correct += best == test.labels[static_cast<size_t>(first + b)];
    }
  }
  return static_cast<double>(correct) / static_cast<double>(count);
}

}  // namespace

TrainResult train_fashion_mnist(const TrainOptions& o) {
  if (o.dataset != "fashion-mnist" && o.dataset != "fashion_mnist")
    throw FieldError("dataset", "'" + o.dataset + "' is not supported (fashion-mnist)");
  if (!(o.target_accuracy > 0 && o.target_accuracy <= 1)) throw FieldError("target_accuracy", "must be in (0, 1]");
  if (o.epochs_max <= 0) throw FieldError("epochs_max", "must be > 0");
  if (o.batch <= 0) throw FieldError("batch", "must be > 0");
  if (!(o.lr >= 0 && std::isfinite(o.lr))) throw FieldError("lr", "must be a finite number > 0");
  if (o.train_limit < 0) throw FieldError("train_limit", "must be >= 0");
  if (o.test_limit < 0) throw FieldError("test_limit", "must be >= 0");
  if (o.threads < 0) throw FieldError("threads", "must be >= 0");

  ModelSpec spec = find_model(o.model);
  if (spec.input != std::vector<int64_t>{1, 28, 28} || spec.classes != 10)
    throw FieldError("model", "" + spec.name + " does not take 1x28x28 images with 10 classes (Fashion-MNIST)");
  GraphOptions go;
  go.batch = o.batch;
  if (!parse_precision(o.precision, go.precision) ||
      (go.precision != Precision::fp32 && go.precision != Precision::bf16))
    throw FieldError("precision", "the cpu backend trains in fp32 or bf16, not '" + o.precision + "'");
  std::string opt = o.optimizer.empty() ? spec.optimizer : o.optimizer;
  if (!parse_optimizer(opt, go.training_options.optimizer))
    throw FieldError("optimizer", "unknown optimizer '" + opt + "' (sgd_momentum|adam)");
  // Checkpoints: the directory must be writable before any work; a checkpoint to resume is
  // read (and its options checked) before the dataset is loaded.
  if (o.resume && o.checkpoint_dir.empty()) throw FieldError("resume", "needs a checkpoint directory to resume from");
  std::optional<TrainCheckpoint> saved;
  // Two runs on one checkpoint directory or one log would interleave their epochs: each is
  // held under an advisory lock for the whole run (file_guard.hpp).
  auto lock = [](const std::string& path, const std::string& field) {
    try {
      return FileLock(path, "");
    } catch (const UserError& e) {
      throw FieldError(field, e.what());
    }
  };
  FileLock checkpoint_lock, log_lock;
  if (!o.checkpoint_dir.empty()) {
    prepare_checkpoint_dir(o.checkpoint_dir);
    checkpoint_lock = lock((std::filesystem::path(o.checkpoint_dir) / "checkpoint.lock").string(), "checkpoint");
    if (o.resume) {
      saved = read_checkpoint(o.checkpoint_dir);
    } else if (!o.overwrite_log && std::filesystem::exists(checkpoint_path(o.checkpoint_dir))) {
      // Like an existing log: an earlier run's checkpoint is not replaced unless asked to.
      throw FieldError("checkpoint", o.checkpoint_dir + ": holds a checkpoint of an earlier run (continue it with resume, "
                                                        "or allow replacing it with overwrite)");
    }
  }
  // An existing log is someone's earlier run: never truncate it unless asked to. A resumed
  // run rewrites its own log from the checkpoint's epochs.
  std::ofstream log;
  if (!o.log_path.empty()) {
    std::error_code ec;
    if (std::filesystem::is_directory(o.log_path, ec)) throw FieldError("log", o.log_path + ": is a directory");
    const bool is_regular = std::filesystem::is_regular_file(o.log_path, ec);
    if (is_regular && std::filesystem::file_size(o.log_path, ec) > 0 && !o.overwrite_log && !saved)
      throw FieldError("log", o.log_path + ": exists and is not empty (give another path, or allow overwriting it)");
    if (same_file(o.log_path, checkpoint_path(o.checkpoint_dir)))
      throw FieldError("log", o.log_path + ": is the checkpoint file; give the log another path");
    log_lock = lock(o.log_path, "log");
    log.open(o.log_path, std::ios::trunc);
    if (!log) throw FieldError("log", o.log_path + ": cannot write file: " + std::strerror(errno));
  }
  // Every line is flushed and checked: a full disk fails the run, naming the log.
  auto log_line = [&](const std::string& line) {
    if (o.log_path.empty()) return;
    log << line << '\n' << std::flush;
    if (!log) throw FieldError("log", o.log_path + ": write failed (disk full?)");
  };
  const std::string data_dir = o.data_dir.empty() ? kFashionMnistDir : o.data_dir;
  FashionMnist data = load_fashion_mnist(data_dir);
  // load_batch copies rows x cols pixels per image into the model's 1x28x28 input: images of
  // another size wrote past it (40x40 trained "fine" on a corrupted heap), and an empty test
  // set made every accuracy 0/0.
  for (const ImageSet* s : {&data.train, &data.test})
    if (s->rows != spec.input[1] || s->cols != spec.input[2])
      throw FieldError("data_dir", data_dir + ": " + (s == &data.train ? "training" : "test") + " images are " +
                                       std::to_string(s->rows) + "x" + std::to_string(s->cols) + ", " + spec.name +
                                       " takes " + std::to_string(spec.input[1]) + "x" + std::to_string(spec.input[2]));
  if (data.train.count == 0) throw FieldError("data_dir", data_dir + ": the training set holds no images");
  if (data.test.count == 0) throw FieldError("data_dir", data_dir + ": the test set (t10k) holds no images");
  OpGraph g = build_graph(spec, go);

  ExecOptions eo;
  eo.seed = o.seed;
  eo.threads = o.threads;
  eo.bf16_path = o.bf16_path;
  // Defaults: Adam's usual 1e-3 (Kingma & Ba); SGD with momentum 0.9 at 0.01 (PyTorch
  // MNIST example scale). The same for every model; override with --lr.
  const bool adam = go.training_options.optimizer == Optimizer::adam;
  eo.lr = static_cast<float>(o.lr > 0 ? o.lr : (adam ? 1e-3 : 0.01));
  Executor ex(g, eo);
  const Feed feed = find_feed(g);
  if (feed.images < 0 || feed.labels < 0) throw InternalError("model graph has no image/label inputs");

  const ImageSet& train = data.train;
  const int64_t n_train = o.train_limit > 0 ? std::min(o.train_limit, train.count) : train.count;
  if (n_train < o.batch) throw FieldError("batch", "larger than the training images used (" + std::to_string(n_train) + ")");
  // Normalisation statistics measured on the training images used.
  double sum = 0, sq = 0;
  const int64_t px = train.rows * train.cols;
  for (int64_t k = 0; k < n_train * px; ++k) {
    double v = train.pixels[static_cast<size_t>(k)] / 255.0;
    sum += v;
    sq += v * v;
  }
  const double cnt = static_cast<double>(n_train * px);
  const float mean = static_cast<float>(sum / cnt);
  const float inv_std = static_cast<float>(1.0 / std::sqrt(std::max(1e-12, sq / cnt - (sum / cnt) * (sum / cnt))));

  TrainResult res;
  res.options = o;
  res.optimizer = optimizer_name(go.training_options.optimizer);
  res.lr = eo.lr;
  res.threads = ex.threads();
  res.bf16_mode = bf16_mode(ex);
  res.bf16_detail = bf16_detail(ex);
  res.isa = cpu_isa_name();
  res.train_images = n_train;
  const int64_t n_test = o.test_limit > 0 ? std::min(o.test_limit, data.test.count) : data.test.count;
  res.test_images = n_test;
  log_line("epoch\tseconds\ttrain_loss\ttest_accuracy");

  const int64_t steps = n_train / o.batch;  // the last partial batch is dropped
  std::vector<int64_t> order(static_cast<size_t>(n_train));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(o.seed);

  // The run as a checkpoint names it; its state is filled in after each epoch.
  TrainCheckpoint ck;
  ck.model = spec.name;
  ck.dataset = "fashion-mnist";
  ck.precision = o.precision;
  ck.optimizer = res.optimizer;
  ck.lr = eo.lr;
  ck.batch = o.batch;
  ck.seed = o.seed;
  ck.train_images = n_train;
  ck.test_images = n_test;
  ck.threads = ex.threads();
  ck.isa = res.isa;
  ck.bf16_mode = res.bf16_mode;
  const std::vector<int> persistent = ex.persistent_tensors();
  int first_epoch = 1;
  double seconds_before = 0;  // training time of the epochs taken from the checkpoint
  if (saved) {
    check_checkpoint_matches(*saved, ck, o.checkpoint_dir);
    if (saved->order.size() != order.size() || saved->tensors.size() != persistent.size())
      throw UserError(checkpoint_path(o.checkpoint_dir) + ": holds " + std::to_string(saved->tensors.size()) +
                      " tensors and " + std::to_string(saved->order.size()) + " images; this run has " +
                      std::to_string(persistent.size()) + " and " + std::to_string(order.size()) +
                      " (the model changed since?)");
    for (size_t k = 0; k < persistent.size(); ++k) {
      const Tensor& T = g.tensor(persistent[k]);
      const auto& st = saved->tensors[k];
      if (st.name != T.name || static_cast<int64_t>(st.values.size()) != T.desc.numel())
        throw UserError(checkpoint_path(o.checkpoint_dir) + ": tensor " + std::to_string(k) + " is " + st.name +
                        " with " + std::to_string(st.values.size()) + " values; this run's is " + T.name + " with " +
                        std::to_string(T.desc.numel()) + " (the model changed since?)");
      ex.write(persistent[k], st.values);
    }
    ex.set_dropout_step(saved->dropout_step);
    ex.set_adam_step(saved->adam_step);
    std::istringstream rs(saved->rng_state);
    rs >> rng;
    if (!rs) throw UserError(checkpoint_path(o.checkpoint_dir) + ": not a valid checkpoint: bad rng state");
    order = saved->order;
    res.epochs = saved->epochs;
    res.resumed_after_epoch = saved->epoch;
    first_epoch = saved->epoch + 1;
    if (!res.epochs.empty()) seconds_before = res.epochs.back().seconds;
    for (const auto& r : res.epochs) {
      std::ostringstream line;
      line << r.epoch << '\t' << r.seconds << '\t' << r.train_loss << '\t' << r.test_accuracy;
      log_line(line.str());
      if (r.test_accuracy >= o.target_accuracy && !res.reached_target) {
        res.reached_target = true;
        res.epochs_to_target = r.epoch;
        res.time_to_target_s = r.seconds;
      }
    }
  }
  auto save_checkpoint = [&](int epoch) {
    if (o.checkpoint_dir.empty()) return;
    ck.epoch = epoch;
    ck.epochs = res.epochs;
    std::ostringstream rs;
    rs << rng;
    ck.rng_state = rs.str();
    ck.dropout_step = ex.dropout_step();
    ck.adam_step = ex.adam_step();
    ck.order = order;
    ck.tensors.clear();
    for (int t : persistent) ck.tensors.push_back({g.tensor(t).name, ex.read(t)});
    write_checkpoint(o.checkpoint_dir, ck);
  };

  ProgressBar bar("train " + spec.name, static_cast<long long>(steps) * o.epochs_max, o.progress);
  const auto start = std::chrono::steady_clock::now();
  for (int epoch = first_epoch; epoch <= o.epochs_max && !res.reached_target; ++epoch) {
    std::shuffle(order.begin(), order.end(), rng);
    double loss_sum = 0;
    for (int64_t s = 0; s < steps; ++s) {
      if (o.stop && o.stop->load()) {
        res.interrupted = true;
        res.stopped_epoch = epoch;
        res.stopped_step = s;
        break;
      }
      load_batch(ex, feed, train, order, s * o.batch, o.batch, mean, inv_std);
      ex.step();
      const float l = ex.loss();
      if (!std::isfinite(l))
        throw FieldError("lr", "training diverged: loss is " + std::string(std::isnan(l) ? "NaN" : "Inf") + " at epoch " +
                                   std::to_string(epoch) + ", step " + std::to_string(s + 1) + " (lower it)");
      loss_sum += l;
      bar.update(static_cast<long long>((epoch - 1) * steps + s + 1), "epoch " + std::to_string(epoch));
    }
    if (res.interrupted) break;
    EpochRecord r;
    r.epoch = epoch;
    r.train_loss = loss_sum / static_cast<double>(steps);
    r.test_accuracy = test_accuracy(ex, feed, data.test, n_test, o.batch, mean, inv_std);
    r.seconds = seconds_before + std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    res.epochs.push_back(r);
    {
      std::ostringstream line;
      line << r.epoch << '\t' << r.seconds << '\t' << r.train_loss << '\t' << r.test_accuracy;
      log_line(line.str());
    }
    save_checkpoint(epoch);
    if (r.test_accuracy >= o.target_accuracy) {
      res.reached_target = true;
      res.epochs_to_target = epoch;
      res.time_to_target_s = r.seconds;
      break;
    }
  }
  bar.finish(res.interrupted ? "interrupted" : res.reached_target ? "target reached" : "target not reached");
  if (!res.epochs.empty()) res.seconds_per_epoch = res.epochs.back().seconds / static_cast<double>(res.epochs.size());
  res.peak_rss_bytes = peak_rss_bytes();
  return res;
}

}  // namespace xpusim::cpu
