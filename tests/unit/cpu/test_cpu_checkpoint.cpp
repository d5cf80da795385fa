// Training checkpoints (devices/cpu/checkpoint.hpp): the executor's carried state restored
// into a fresh executor continues bit for bit (weights, momentum / Adam moments, Adam's step,
// the dropout stream), and the file format refuses damaged files and other runs' options.
#include <catch2/catch.hpp>

#include <cstring>
#include <limits>
#include <filesystem>
#include <functional>
#include <fstream>

#include "common/crc32c.hpp"
#include "common/error.hpp"
#include "devices/cpu/checkpoint.hpp"
#include "devices/cpu/executor.hpp"
#include "models/zoo.hpp"

using namespace xpusim;
using namespace xpusim::cpu;

namespace {

OpGraph mlp_graph(Optimizer opt) {
  GraphOptions o;
  o.batch = 8;
  o.training_options.optimizer = opt;
  return build_graph(find_model("mnist_mlp"), o);  // two dropout layers
}

std::vector<TrainCheckpoint::TensorData> state_of(const OpGraph& g, Executor& ex) {
  std::vector<TrainCheckpoint::TensorData> out;
  for (int t : ex.persistent_tensors()) out.push_back({g.tensor(t).name, ex.read(t)});
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::string tmp_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("xpusim_ckpt_" + name);
  std::filesystem::remove_all(d);
  return d.string();
}

TrainCheckpoint sample_checkpoint() {
  TrainCheckpoint ck;
  ck.model = "mnist_mlp";
  ck.dataset = "fashion-mnist";
  ck.precision = "fp32";
  ck.optimizer = "adam";
  ck.lr = static_cast<float>(1e-3);
  ck.batch = 32;
  ck.seed = 7;
  ck.train_images = 5;
  ck.test_images = 3;
  ck.threads = 2;
  ck.isa = "avx2";
  ck.bf16_mode = "off";
  ck.epoch = 2;
  ck.epochs = {{1, 0.5, 1.0 / 3.0, 0.7}, {2, 1.25, 0.1 + 0.2, 0.8125}};
  ck.rng_state = "1 2 3";
  ck.dropout_step = 42;
  ck.adam_step = 42;
  ck.order = {4, 0, 3, 1, 2};
  ck.tensors = {{"w", {1.5f, -0.0f, 3.4e38f}}, {"m", {1e-40f}}};
  return ck;
}

}  // namespace

TEST_CASE("checkpoint: executor state restored into a fresh executor continues bit for bit", "[cpu][checkpoint]") {
  for (Optimizer opt : {Optimizer::sgd_momentum, Optimizer::adam}) {
    OpGraph g = mlp_graph(opt);
    ExecOptions eo;
    eo.seed = 3;
    eo.threads = 1;
    Executor a(g, eo);
    a.fill_synthetic();
    a.step();
    a.step();
    const auto saved = state_of(g, a);
    const uint64_t dropout = a.dropout_step();
    const int64_t adam = a.adam_step();
    CHECK(dropout == 2);
    CHECK(adam == (opt == Optimizer::adam ? 2 : 0));
    a.step();
    const float loss_a = a.loss();
    const auto after_a = state_of(g, a);

    // A fresh executor (the same seed, so the same synthetic batch) is two steps behind: the
    // restored weights, optimizer state and counters must make its next step a's third.
    Executor b(g, eo);
    b.fill_synthetic();
    const auto persistent = b.persistent_tensors();
    REQUIRE(persistent.size() == saved.size());
    for (size_t k = 0; k < saved.size(); ++k) b.write(persistent[k], saved[k].values);
    b.set_dropout_step(dropout);
    b.set_adam_step(adam);
    b.step();
    const float loss_b = b.loss();
    CHECK(std::memcmp(&loss_a, &loss_b, sizeof(float)) == 0);
    const auto after_b = state_of(g, b);
    REQUIRE(after_a.size() == after_b.size());
    for (size_t k = 0; k < after_a.size(); ++k) CHECK(same_bits(after_a[k].values, after_b[k].values));
  }
}

TEST_CASE("checkpoint: file round trip, damaged files and other options refused", "[cpu][checkpoint]") {
  const std::string dir = tmp_dir("roundtrip");
  CHECK_FALSE(read_checkpoint(dir).has_value());  // nothing there yet
  prepare_checkpoint_dir(dir);
  const TrainCheckpoint ck = sample_checkpoint();
  write_checkpoint(dir, ck);
  auto back = read_checkpoint(dir);
  REQUIRE(back.has_value());
  CHECK(back->model == ck.model);
  CHECK(back->lr == ck.lr);
  CHECK(back->epoch == 2);
  REQUIRE(back->epochs.size() == 2);
  CHECK(back->epochs[0].train_loss == ck.epochs[0].train_loss);  // exact, not approximately
  CHECK(back->epochs[1].train_loss == ck.epochs[1].train_loss);
  CHECK(back->rng_state == "1 2 3");
  CHECK(back->dropout_step == 42);
  CHECK(back->threads == 2);
  CHECK(back->isa == "avx2");
  CHECK(back->bf16_mode == "off");
  CHECK(back->order == ck.order);
  REQUIRE(back->tensors.size() == 2);
  CHECK(same_bits(back->tensors[0].values, ck.tensors[0].values));
  CHECK(same_bits(back->tensors[1].values, ck.tensors[1].values));
  check_checkpoint_matches(*back, ck, dir);  // the same options: fine

  TrainCheckpoint other = ck;
  other.batch = 64;
  try {
    check_checkpoint_matches(ck, other, dir);
    FAIL("a checkpoint with another batch was accepted");
  } catch (const FieldError& e) {
    CHECK(e.field() == "batch");
    CHECK_THAT(e.message(), Catch::Contains("was written with batch 32, not 64"));
  }
  other = ck;
  other.seed = 8;
  CHECK_THROWS_WITH(check_checkpoint_matches(ck, other, dir), Catch::StartsWith("seed:"));
  other = ck;
  other.train_images = 6;
  CHECK_THROWS_WITH(check_checkpoint_matches(ck, other, dir), Catch::StartsWith("train_limit:"));
  // Every other option that changes the numbers is refused too, naming its field (the CLI
  // turns the field into the flag).
  struct Changed {
    std::function<void(TrainCheckpoint&)> change;
    std::string field, says;
  };
  const std::vector<Changed> changes = {
      {[](TrainCheckpoint& c) { c.threads = 4; }, "threads", "was written with threads 2, not 4"},
      {[](TrainCheckpoint& c) { c.lr = static_cast<float>(2e-3); }, "lr",
       "was written with learning rate 0.0010000000474974513, not 0.0020000000949949026"},
      {[](TrainCheckpoint& c) { c.model = "fashion_cnn"; }, "model", "was written with model mnist_mlp, not fashion_cnn"},
      {[](TrainCheckpoint& c) { c.precision = "bf16"; }, "precision", "was written with precision fp32, not bf16"},
      {[](TrainCheckpoint& c) { c.optimizer = "sgd_momentum"; }, "optimizer",
       "was written with optimizer adam, not sgd_momentum"},
      {[](TrainCheckpoint& c) { c.test_images = 4; }, "test_limit", "was written with test images 3, not 4"},
      {[](TrainCheckpoint& c) { c.isa = "avx512_core"; }, "checkpoint",
       "was written with oneDNN ISA avx2, not avx512_core"},
      {[](TrainCheckpoint& c) { c.bf16_mode = "emulated"; }, "checkpoint",
       "was written with bf16 mode off, not emulated"},
  };
  for (const Changed& c : changes) {
    other = ck;
    c.change(other);
    try {
      check_checkpoint_matches(ck, other, dir);
      FAIL("a resume with another " + c.field + " was accepted");
    } catch (const FieldError& e) {
      CHECK(e.field() == c.field);
      CHECK_THAT(e.message(), Catch::Contains(c.says));
    }
  }
  // A file from before the ISA and bf16 mode were recorded: those two are not checked.
  other = ck;
  other.isa = "avx512_core";
  TrainCheckpoint older = ck;
  older.isa.clear();
  older.bf16_mode.clear();
  check_checkpoint_matches(older, other, dir);
  write_checkpoint(dir, older);
  auto older_back = read_checkpoint(dir);
  REQUIRE(older_back.has_value());
  CHECK(older_back->isa.empty());
  write_checkpoint(dir, ck);

  // Damaged files.
  const std::string path = checkpoint_path(dir);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto write_bytes = [&](const std::string& b) { std::ofstream(path, std::ios::binary | std::ios::trunc) << b; };
  write_bytes(bytes.substr(0, bytes.size() - 3));
  CHECK_THROWS_WITH(read_checkpoint(dir), Catch::Contains("truncated"));
  std::string flipped = bytes;
  flipped.back() ^= 1;
  write_bytes(flipped);
  CHECK_THROWS_WITH(read_checkpoint(dir), Catch::Contains("checksum mismatch (CRC-32C of header and payload"));
  std::string v3 = bytes;
  v3.replace(v3.find(" 2\n"), 3, " 3\n");
  write_bytes(v3);
  CHECK_THROWS_WITH(read_checkpoint(dir), Catch::Contains("format version 3, this xpusim reads version 2"));
  write_bytes("hello\n");
  CHECK_THROWS_WITH(read_checkpoint(dir), Catch::Contains(path + ": not a valid checkpoint"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("checkpoint: a directory that cannot be made is an error naming it", "[cpu][checkpoint]") {
  try {
    prepare_checkpoint_dir("/dev/null/ck");
    FAIL("no error");
  } catch (const FieldError& e) {
    CHECK(e.field() == "checkpoint");
    CHECK_THAT(e.message(), Catch::StartsWith("/dev/null/ck: cannot create directory"));
  }
}

namespace {

// `bytes` with one header line replaced and the CRC-32C recomputed, as a forger would: the
// range checks behind the checksum must still refuse it.
std::string with_line(const std::string& bytes, const std::string& from, const std::string& to) {
  const size_t end = bytes.find("\nend\n");
  std::string header = bytes.substr(0, end + 1);
  const std::string payload = bytes.substr(end + 5);
  const size_t at = header.find(from);
  REQUIRE(at != std::string::npos);
  header.replace(at, from.size(), to);
  const size_t crc_at = header.find("crc32c ");
  std::string covered = header.substr(0, crc_at);
  uint32_t crc = crc32c(0, covered.data(), covered.size());
  crc = crc32c(crc, payload.data(), payload.size());
  return covered + "crc32c " + crc32c_hex(crc) + "\nend\n" + payload;
}

std::string with_payload(const std::string& bytes, size_t offset, const void* data, size_t n) {
  const size_t end = bytes.find("\nend\n");
  std::string payload = bytes.substr(end + 5);
  std::memcpy(payload.data() + offset, data, n);
  std::string header = bytes.substr(0, end + 1);
  std::string covered = header.substr(0, header.find("crc32c "));
  uint32_t crc = crc32c(0, covered.data(), covered.size());
  crc = crc32c(crc, payload.data(), payload.size());
  return covered + "crc32c " + crc32c_hex(crc) + "\nend\n" + payload;
}

}  // namespace

TEST_CASE("checkpoint: header fields are checksummed, range-checked and cross-checked", "[cpu][checkpoint][reliability]") {
  const std::string dir = tmp_dir("tampered");
  prepare_checkpoint_dir(dir);
  write_checkpoint(dir, sample_checkpoint());
  const std::string path = checkpoint_path(dir);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto refused = [&](const std::string& b, const std::string& says) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << b;
    CHECK_THROWS_WITH(read_checkpoint(dir), Catch::Contains(path + ": not a valid checkpoint") && Catch::Contains(says));
  };
  // An edited header line without a new checksum: caught by the CRC (FNV-1a covered the payload only).
  std::string edited = bytes;
  edited.replace(edited.find(" 0.8125\n"), 8, " 7.0000\n");
  refused(edited, "checksum mismatch");
  // With the checksum recomputed, each range check still holds.
  refused(with_line(bytes, "0.8125\n", "7\n"), "test_accuracy '7' is not in [0, 1]");
  refused(with_line(bytes, "dropout_step 42\n", "dropout_step -5\n"), "dropout_step: '-5' is not a whole number");
  refused(with_line(bytes, "epoch 2\n", "epoch 1e3\n"), "epoch: '1e3' is not a whole number");
  refused(with_line(bytes, "record 2 ", "record 1 "), "record of epoch 1 where epoch 2 was expected");
  refused(with_line(bytes, "batch 32\n", "batch 32\nbatch 64\n"), "'batch' given twice");
  refused(with_line(bytes, "lr ", "lr nan\nx "), "lr: 'nan' is not a number > 0");
  refused(with_line(bytes, "train_images 5\n", "train_images 6\n"), "the data order holds 5 images, train_images says 6");
  // Data-order indices outside the dataset (a segfault on resume) or repeated.
  const int64_t far = 1000000000;
  refused(with_payload(bytes, 0, &far, sizeof far), "data order entry 0 is 1000000000, not an unused image index in [0, 5)");
  const int64_t dup = 0;
  refused(with_payload(bytes, 0, &dup, sizeof dup), "data order entry 1 is 0");  // {0, 0, 3, 1, 2}
  const float nan = std::numeric_limits<float>::quiet_NaN();
  refused(with_payload(bytes, 5 * sizeof(int64_t), &nan, sizeof nan), "tensor w value 0 is not finite");
  // The untouched file still reads.
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  CHECK(read_checkpoint(dir).has_value());
  std::filesystem::remove_all(dir);
}

TEST_CASE("checkpoint: a directory named checkpoint.xpck is an error naming it", "[cpu][checkpoint][reliability]") {
  const std::string dir = tmp_dir("dir_named_checkpoint");
  std::filesystem::create_directories(std::filesystem::path(dir) / "checkpoint.xpck");
  CHECK_THROWS_WITH(read_checkpoint(dir), Catch::Contains("checkpoint.xpck: is a directory, expected a file"));
  std::filesystem::remove_all(dir);
}
