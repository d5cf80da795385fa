// Training checkpoints for `xpusim train --checkpoint DIR [--resume]`: everything a run
// carries from one epoch to the next (weights, optimizer state, the shuffling RNG, the data
// order, the dropout and Adam counters, the epochs so far), written atomically after every
// epoch to DIR/checkpoint.xpck so that a resumed run continues bit for bit. The format is
// documented in docs/interrupt_resume.md (a versioned text header, then a binary payload
// with its length and a CRC-32C over header and payload; every field is range-checked on read).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "devices/cpu/trainer.hpp"

namespace xpusim::cpu {

// Version 2: a CRC-32C over header and payload (version 1 had an FNV-1a hash of the payload).
constexpr int kCheckpointVersion = 2;

struct TrainCheckpoint {
  // What the run was: a resume must match every field (check_checkpoint_matches).
  std::string model, dataset, precision, optimizer;
  double lr = 0;  // the learning rate in effect (after defaults)
  int64_t batch = 0;
  uint64_t seed = 0;
  int64_t train_images = 0, test_images = 0;
  // The effective thread count and the CPU's kernels: oneDNN may sum in another order with
  // another thread count or ISA, so these must match too. Empty strings (a file written
  // before they were recorded) are not checked.
  int threads = 0;
  std::string isa, bf16_mode;
  // Where it is.
  int epoch = 0;                    // last finished epoch
  std::vector<EpochRecord> epochs;  // the log so far, exact values
  std::string rng_state;            // std::mt19937_64 as operator<< writes it
  uint64_t dropout_step = 0;
  int64_t adam_step = 0;
  std::vector<int64_t> order;       // the data order after the last epoch's shuffle
  struct TensorData {
    std::string name;
    std::vector<float> values;      // plain fp32
  };
  std::vector<TensorData> tensors;  // weights, then optimizer state
};

// DIR/checkpoint.xpck.
std::string checkpoint_path(const std::string& dir);
// Creates DIR when missing and checks that a file can be written in it, before training
// starts: FieldError("checkpoint", ...) naming the directory otherwise.
void prepare_checkpoint_dir(const std::string& dir);
// Writes atomically (temporary file, then rename); FieldError("checkpoint", ...) on failure.
void write_checkpoint(const std::string& dir, const TrainCheckpoint& ck);
// nullopt when DIR holds no checkpoint; UserError naming the file when it is not a valid
// one (wrong magic or version, truncated, checksum mismatch).
std::optional<TrainCheckpoint> read_checkpoint(const std::string& dir);
// FieldError naming the first field (model, dataset, precision, optimizer, lr, batch, seed,
// train_limit, test_limit, threads; `checkpoint` for another CPU ISA or bf16 mode) where
// `saved` differs from `now`: a resume promises bit-identical results, which any of these
// would break.
void check_checkpoint_matches(const TrainCheckpoint& saved, const TrainCheckpoint& now, const std::string& dir);

}  // namespace xpusim::cpu
