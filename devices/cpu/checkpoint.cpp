#include "devices/cpu/checkpoint.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <set>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/checked_io.hpp"
#include "common/error.hpp"
#include "common/crc32c.hpp"
#include "common/file_guard.hpp"
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
  std::string header = h.str();
  // The checksum covers every header line before it and the payload: a changed accuracy,
  // epoch or index is caught like a flipped weight bit.
  uint32_t crc = crc32c(0, header.data(), header.size());
  crc = crc32c(crc, payload.data(), payload.size());
  header += "crc32c " + crc32c_hex(crc) + "\nend\n";
  try {
    write_file_atomic(checkpoint_path(dir), [&](std::ostream& os) {
      os << header;
      os.write(payload.data(), static_cast<std::streamsize>(payload.size()));
    });
  } catch (const UserError& e) {
    throw FieldError("checkpoint", e.what());
  }
}

namespace {

// Whole-token number parsing: "1e3" is not the integer 1, "-5" is not a uint64, "0x10" and
// "12abc" are not numbers at all.
template <typename T>
bool whole_int(const std::string& tok, T& out) {
  if (tok.empty()) return false;
  const char* b = tok.data();
  const char* e = b + tok.size();
  auto [p, ec] = std::from_chars(b, e, out);
  return ec == std::errc() && p == e;
}

bool whole_double(const std::string& tok, double& out) {
  if (tok.empty()) return false;
  const char* b = tok.data();
  const char* e = b + tok.size();
  auto [p, ec] = std::from_chars(b, e, out);
  return ec == std::errc() && p == e && std::isfinite(out);
}

std::vector<std::string> split_spaces(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream ls(line);
  std::string t;
  while (ls >> t) out.push_back(t);
  return out;
}

}  // namespace

std::optional<TrainCheckpoint> read_checkpoint(const std::string& dir) {
  const std::string path = checkpoint_path(dir);
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return std::nullopt;
  // A directory, device or FIFO named checkpoint.xpck, or a file past the cap, is refused
  // with its reason (a directory gave "internal error: basic_filebuf::underflow").
  std::string all;
  try {
    all = read_input_file(path, kMaxBinaryInputBytes);
  } catch (const UserError& e) {
    throw UserError(std::string("cannot read checkpoint: ") + e.what());
  }
  auto bad = [&](const std::string& why) { return UserError(path + ": not a valid checkpoint: " + why); };
  const size_t end = all.find("\nend\n");
  if (end == std::string::npos) throw bad("no header end (truncated?)");
  const std::string header = all.substr(0, end + 1);
  const std::string payload = all.substr(end + 5);

  TrainCheckpoint ck;
  std::istringstream h(header);
  std::string line;
  std::getline(h, line);
  {
    const auto t = split_spaces(line);
    int version = 0;
    if (t.size() != 2 || t[0] != kMagic) throw bad("does not start with '" + std::string(kMagic) + "'");
    if (!whole_int(t[1], version) || version != kCheckpointVersion)
      throw bad("format version " + t[1] + ", this xpusim reads version " + std::to_string(kCheckpointVersion) +
                " (start the run again without resume)");
  }
  // Integrity before meaning (after the version, which fixes the layout): the payload's length (a cut-off file says "truncated"), then
  // the CRC-32C over the header lines before the checksum line and the payload, and only then
  // are the values read and range-checked.
  {
    const size_t crc_at = header.rfind("\ncrc32c ");
    if (crc_at == std::string::npos) throw bad("no crc32c checksum line");
    const size_t pb = header.find("\npayload_bytes ");
    uint64_t stated = 0;
    if (pb == std::string::npos ||
        !whole_int(header.substr(pb + 15, header.find('\n', pb + 1) - (pb + 15)), stated))
      throw bad("no payload_bytes line");
    if (payload.size() != stated)
      throw bad("payload is " + std::to_string(payload.size()) + " bytes, the header says " + std::to_string(stated) +
                " (truncated?)");
    const std::string stated_crc = header.substr(crc_at + 8, header.size() - 1 - (crc_at + 8));
    uint32_t crc = crc32c(0, header.data(), crc_at + 1);
    crc = crc32c(crc, payload.data(), payload.size());
    if (crc32c_hex(crc) != stated_crc)
      throw bad("checksum mismatch (CRC-32C of header and payload is " + crc32c_hex(crc) + ", the file says " +
                stated_crc + "): the file was damaged or edited");
  }
  uint64_t order_n = 0, payload_bytes = 0;
  std::string crc_text;
  size_t crc_line_at = std::string::npos;  // offset of the crc32c line in `header`
  std::vector<uint64_t> numels;
  std::set<std::string> seen;
  int line_no = 1;
  size_t offset = line.size() + 1;
  while (std::getline(h, line)) {
    ++line_no;
    const size_t line_at = offset;
    offset += line.size() + 1;
    const auto t = split_spaces(line);
    const std::string where = "line " + std::to_string(line_no) + ": ";
    if (t.empty()) throw bad(where + "empty line");
    const std::string& key = t[0];
    if (crc_line_at != std::string::npos) throw bad(where + "'" + key + "' after the checksum line");
    if (key != "record" && key != "tensor" && !seen.insert(key).second) throw bad(where + "'" + key + "' given twice");
    auto args = [&](size_t n) {
      if (t.size() != n + 1) throw bad(where + "'" + key + "' takes " + std::to_string(n) + " value(s)");
    };
    auto int_in = [&](const std::string& tok, auto& out, long double lo, long double hi) {
      if (!whole_int(tok, out) || static_cast<long double>(out) < lo || static_cast<long double>(out) > hi)
        throw bad(where + key + ": '" + tok + "' is not a whole number in [" + fmt_g(double(lo), 17) + ", " +
                  fmt_g(double(hi), 17) + "]");
    };
    constexpr long double kMaxCount = 2147483647.0L;
    if (key == "model") args(1), ck.model = t[1];
    else if (key == "dataset") args(1), ck.dataset = t[1];
    else if (key == "precision") args(1), ck.precision = t[1];
    else if (key == "optimizer") args(1), ck.optimizer = t[1];
    else if (key == "isa") args(1), ck.isa = t[1];
    else if (key == "bf16_mode") args(1), ck.bf16_mode = t[1];
    else if (key == "lr") {
      args(1);
      if (!whole_double(t[1], ck.lr) || !(ck.lr > 0)) throw bad(where + "lr: '" + t[1] + "' is not a number > 0");
    } else if (key == "batch") args(1), int_in(t[1], ck.batch, 1, kMaxCount);
    else if (key == "seed") args(1), int_in(t[1], ck.seed, 0, 1.8446744073709551615e19L);
    else if (key == "train_images") args(1), int_in(t[1], ck.train_images, 1, kMaxCount);
    else if (key == "test_images") args(1), int_in(t[1], ck.test_images, 1, kMaxCount);
    else if (key == "threads") args(1), int_in(t[1], ck.threads, 0, 1024);
    else if (key == "epoch") args(1), int_in(t[1], ck.epoch, 0, 100000);
    else if (key == "dropout_step") args(1), int_in(t[1], ck.dropout_step, 0, 1.8446744073709551615e19L);
    else if (key == "adam_step") args(1), int_in(t[1], ck.adam_step, 0, 9.2233720368547758e18L);
    else if (key == "rng") {
      const size_t sp = line.find(' ');
      ck.rng_state = sp == std::string::npos ? "" : line.substr(sp + 1);
      if (t.size() < 2) throw bad(where + "rng: no state");
    } else if (key == "record") {
      args(4);
      EpochRecord e;
      int_in(t[1], e.epoch, 1, 100000);
      if (!whole_double(t[2], e.seconds) || e.seconds < 0) throw bad(where + "record: seconds '" + t[2] + "' is not a time >= 0");
      if (!whole_double(t[3], e.train_loss) || e.train_loss < 0)
        throw bad(where + "record: train_loss '" + t[3] + "' is not a finite loss >= 0");
      if (!whole_double(t[4], e.test_accuracy) || e.test_accuracy < 0 || e.test_accuracy > 1)
        throw bad(where + "record: test_accuracy '" + t[4] + "' is not in [0, 1]");
      const int want = static_cast<int>(ck.epochs.size()) + 1;
      if (e.epoch != want)
        throw bad(where + "record of epoch " + t[1] + " where epoch " + std::to_string(want) +
                  " was expected (records must be epochs 1, 2, ... in order, each once)");
      if (!ck.epochs.empty() && e.seconds < ck.epochs.back().seconds)
        throw bad(where + "record: seconds go backwards (" + t[2] + " after " + exact(ck.epochs.back().seconds) + ")");
      ck.epochs.push_back(e);
    } else if (key == "order") args(1), int_in(t[1], order_n, 1, kMaxCount);
    else if (key == "tensor") {
      args(2);
      TrainCheckpoint::TensorData td;
      td.name = t[1];
      uint64_t n = 0;
      int_in(t[2], n, 1, 1e12L);
      ck.tensors.push_back(td);
      numels.push_back(n);
    } else if (key == "payload_bytes") args(1), int_in(t[1], payload_bytes, 0, 1.8446744073709551615e19L);
    else if (key == "crc32c") {
      args(1);
      crc_text = t[1];
      crc_line_at = line_at;
    } else {
      throw bad(where + "unknown key '" + key + "'");
    }
  }
  if (crc_line_at == std::string::npos || crc_text.empty()) throw bad("no crc32c checksum line");
  for (const char* k : {"model", "dataset", "precision", "optimizer", "lr", "batch", "seed", "train_images", "test_images",
                        "threads", "epoch", "dropout_step", "adam_step", "rng", "order", "payload_bytes"})
    if (!seen.count(k)) throw bad(std::string("header lacks '") + k + "'");
  if (static_cast<int>(ck.epochs.size()) != ck.epoch) throw bad("epoch " + std::to_string(ck.epoch) + " but " +
                                                                std::to_string(ck.epochs.size()) + " records");
  if (order_n != static_cast<uint64_t>(ck.train_images))
    throw bad("the data order holds " + std::to_string(order_n) + " images, train_images says " +
              std::to_string(ck.train_images));
  // Sizes in long double: a header cannot make the sum wrap round to the payload's size.
  long double want = static_cast<long double>(order_n) * sizeof(int64_t);
  for (uint64_t n : numels) want += static_cast<long double>(n) * sizeof(float);
  if (static_cast<long double>(payload.size()) != want || payload.size() != payload_bytes)
    throw bad("payload is " + std::to_string(payload.size()) + " bytes, the header says " +
              std::to_string(payload_bytes) + " (truncated?)");
  size_t off = 0;
  ck.order.resize(order_n);
  std::memcpy(ck.order.data(), payload.data(), order_n * sizeof(int64_t));
  off += order_n * sizeof(int64_t);
  // The data order must be a permutation of the training images: an index past them read
  // outside the dataset (a segfault on resume).
  std::vector<char> used(order_n, 0);
  for (size_t i = 0; i < ck.order.size(); ++i) {
    const int64_t v = ck.order[i];
    if (v < 0 || static_cast<uint64_t>(v) >= order_n || used[static_cast<size_t>(v)])
      throw bad("data order entry " + std::to_string(i) + " is " + std::to_string(v) + ", not an unused image index in [0, " +
                std::to_string(order_n) + ")");
    used[static_cast<size_t>(v)] = 1;
  }
  for (size_t k = 0; k < ck.tensors.size(); ++k) {
    ck.tensors[k].values.resize(numels[k]);
    std::memcpy(ck.tensors[k].values.data(), payload.data() + off, numels[k] * sizeof(float));
    off += numels[k] * sizeof(float);
    for (size_t i = 0; i < ck.tensors[k].values.size(); ++i)
      if (!std::isfinite(ck.tensors[k].values[i]))
        throw bad("tensor " + ck.tensors[k].name + " value " + std::to_string(i) + " is not finite");
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
