#include "devices/cpu/checkpoint.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/checked_io.hpp"
#include "common/error.hpp"
#include "common/fingerprint.hpp"
#include "common/output.hpp"

namespace xpusim::cpu {

namespace {

const char* kMagic = "xpusim-train-checkpoint";

// 17 significant digits: every double (and float) reads back to the same bits.
std::string exact(double v) { return fmt_g(v, 17); }

template <typename T>
void append_raw(std::string& buf, const T* p, size_t n) {
  buf.append(reinterpret_cast<const char*>(p), n * sizeof(T));
}

}  // namespace

std::string checkpoint_path(const std::string& dir) { return (std::filesystem::path(dir) / "checkpoint.xpck").string(); }

void prepare_checkpoint_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw FieldError("checkpoint", dir + ": cannot create directory: " + ec.message());
  if (!std::filesystem::is_directory(dir, ec)) throw FieldError("checkpoint", dir + ": is not a directory");
  // Find out now, not after the first epoch, whether checkpoints can be written here.
  const std::string probe = (std::filesystem::path(dir) / ".write-test").string();
  try {
    write_file_checked(probe, [](std::ostream& os) { os << "xpusim\n"; });
  } catch (const UserError& e) {
    throw FieldError("checkpoint", dir + ": directory is not writable (" + e.what() + ")");
  }
  std::filesystem::remove(probe, ec);
}

void write_checkpoint(const std::string& dir, const TrainCheckpoint& ck) {
  std::string payload;
  append_raw(payload, ck.order.data(), ck.order.size());
  for (const auto& t : ck.tensors) append_raw(payload, t.values.data(), t.values.size());
  std::ostringstream h;
  h << kMagic << ' ' << kCheckpointVersion << '\n';
  h << "model " << ck.model << '\n' << "dataset " << ck.dataset << '\n' << "precision " << ck.precision << '\n';
  h << "optimizer " << ck.optimizer << '\n' << "lr " << exact(ck.lr) << '\n' << "batch " << ck.batch << '\n';
  h << "seed " << ck.seed << '\n' << "train_images " << ck.train_images << '\n';
  h << "test_images " << ck.test_images << '\n' << "threads " << ck.threads << '\n';
  if (!ck.isa.empty()) h << "isa " << ck.isa << '\n';
  if (!ck.bf16_mode.empty()) h << "bf16_mode " << ck.bf16_mode << '\n';
  h << "epoch " << ck.epoch << '\n' << "dropout_step " << ck.dropout_step << '\n';
  h << "adam_step " << ck.adam_step << '\n' << "rng " << ck.rng_state << '\n';
  for (const auto& e : ck.epochs)
    h << "record " << e.epoch << ' ' << exact(e.seconds) << ' ' << exact(e.train_loss) << ' '
      << exact(e.test_accuracy) << '\n';
  h << "order " << ck.order.size() << '\n';
  for (const auto& t : ck.tensors) h << "tensor " << t.name << ' ' << t.values.size() << '\n';
  h << "payload_bytes " << payload.size() << '\n';
  h << "payload_fnv1a64 " << fnv1a64_hex(payload.data(), payload.size()) << '\n';
  h << "end\n";
  const std::string header = h.str();
  try {
    write_file_atomic(checkpoint_path(dir), [&](std::ostream& os) {
      os << header;
      os.write(payload.data(), static_cast<std::streamsize>(payload.size()));
    });
  } catch (const UserError& e) {
    throw FieldError("checkpoint", e.what());
  }
}

std::optional<TrainCheckpoint> read_checkpoint(const std::string& dir) {
  const std::string path = checkpoint_path(dir);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot read checkpoint: " + std::strerror(errno));
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto bad = [&](const std::string& why) { return UserError(path + ": not a valid checkpoint: " + why); };
  const size_t end = all.find("\nend\n");
  if (end == std::string::npos) throw bad("no header end (truncated?)");
  std::istringstream h(all.substr(0, end + 1));
  const std::string payload = all.substr(end + 5);

  TrainCheckpoint ck;
  std::string line, magic;
  int version = 0;
  std::getline(h, line);
  std::istringstream first(line);
  if (!(first >> magic >> version) || magic != kMagic) throw bad("does not start with '" + std::string(kMagic) + "'");
  if (version != kCheckpointVersion)
    throw bad("format version " + std::to_string(version) + ", this xpusim reads version " +
              std::to_string(kCheckpointVersion));
  size_t order_n = 0, payload_bytes = 0;
  std::string payload_hash;
  std::vector<size_t> numels;
  int line_no = 1;
  while (std::getline(h, line)) {
    ++line_no;
    std::istringstream ls(line);
    std::string key;
    ls >> key;
    bool ok = true;
    if (key == "model") ok = bool(ls >> ck.model);
    else if (key == "dataset") ok = bool(ls >> ck.dataset);
    else if (key == "precision") ok = bool(ls >> ck.precision);
    else if (key == "optimizer") ok = bool(ls >> ck.optimizer);
    else if (key == "lr") ok = bool(ls >> ck.lr);
    else if (key == "batch") ok = bool(ls >> ck.batch);
    else if (key == "seed") ok = bool(ls >> ck.seed);
    else if (key == "train_images") ok = bool(ls >> ck.train_images);
    else if (key == "test_images") ok = bool(ls >> ck.test_images);
    else if (key == "threads") ok = bool(ls >> ck.threads);
    else if (key == "isa") ok = bool(ls >> ck.isa);
    else if (key == "bf16_mode") ok = bool(ls >> ck.bf16_mode);
    else if (key == "epoch") ok = bool(ls >> ck.epoch);
    else if (key == "dropout_step") ok = bool(ls >> ck.dropout_step);
    else if (key == "adam_step") ok = bool(ls >> ck.adam_step);
    else if (key == "rng") {
      std::getline(ls >> std::ws, ck.rng_state);
      ok = !ck.rng_state.empty();
    } else if (key == "record") {
      EpochRecord e;
      ok = bool(ls >> e.epoch >> e.seconds >> e.train_loss >> e.test_accuracy);
      ck.epochs.push_back(e);
    } else if (key == "order") ok = bool(ls >> order_n);
    else if (key == "tensor") {
      TrainCheckpoint::TensorData t;
      size_t n = 0;
      ok = bool(ls >> t.name >> n);
      ck.tensors.push_back(t);
      numels.push_back(n);
    } else if (key == "payload_bytes") ok = bool(ls >> payload_bytes);
    else if (key == "payload_fnv1a64") ok = bool(ls >> payload_hash);
    else throw bad("line " + std::to_string(line_no) + ": unknown key '" + key + "'");
    if (!ok) throw bad("line " + std::to_string(line_no) + ": bad value for '" + key + "'");
  }
  if (ck.model.empty() || ck.rng_state.empty() || payload_hash.empty()) throw bad("header lacks model, rng or payload");
  if (static_cast<int>(ck.epochs.size()) != ck.epoch) throw bad("epoch " + std::to_string(ck.epoch) + " but " +
                                                                std::to_string(ck.epochs.size()) + " records");
  size_t want = order_n * sizeof(int64_t);
  for (size_t n : numels) want += n * sizeof(float);
  if (payload.size() != payload_bytes || want != payload_bytes)
    throw bad("payload is " + std::to_string(payload.size()) + " bytes, the header says " +
              std::to_string(payload_bytes) + " (truncated?)");
  if (fnv1a64_hex(payload.data(), payload.size()) != payload_hash) throw bad("payload checksum mismatch");
  size_t off = 0;
  ck.order.resize(order_n);
  std::memcpy(ck.order.data(), payload.data(), order_n * sizeof(int64_t));
  off += order_n * sizeof(int64_t);
  for (size_t k = 0; k < ck.tensors.size(); ++k) {
    ck.tensors[k].values.resize(numels[k]);
    std::memcpy(ck.tensors[k].values.data(), payload.data() + off, numels[k] * sizeof(float));
    off += numels[k] * sizeof(float);
  }
  return ck;
}

void check_checkpoint_matches(const TrainCheckpoint& saved, const TrainCheckpoint& now, const std::string& dir) {
  const std::string file = checkpoint_path(dir);
  auto differ = [&](const std::string& field, const std::string& what, const std::string& was, const std::string& is) {
    if (was != is)
      throw FieldError(field, file + " was written with " + what + " " + was + ", not " + is +
                                  " (resume with the same options, or use another checkpoint directory)");
  };
  differ("model", "model", saved.model, now.model);
  differ("dataset", "dataset", saved.dataset, now.dataset);
  differ("precision", "precision", saved.precision, now.precision);
  differ("optimizer", "optimizer", saved.optimizer, now.optimizer);
  differ("lr", "learning rate", exact(saved.lr), exact(now.lr));
  differ("batch", "batch", std::to_string(saved.batch), std::to_string(now.batch));
  differ("seed", "seed", std::to_string(saved.seed), std::to_string(now.seed));
  differ("train_limit", "training images", std::to_string(saved.train_images), std::to_string(now.train_images));
  differ("test_limit", "test images", std::to_string(saved.test_images), std::to_string(now.test_images));
  differ("threads", "threads", std::to_string(saved.threads), std::to_string(now.threads));
  // No flag picks these: the run moved to another CPU (or oneDNN build).
  if (!saved.isa.empty() && !now.isa.empty())
    differ("checkpoint", "oneDNN ISA", saved.isa, now.isa);
  if (!saved.bf16_mode.empty() && !now.bf16_mode.empty())
    differ("checkpoint", "bf16 mode", saved.bf16_mode, now.bf16_mode);
}

}  // namespace xpusim::cpu
