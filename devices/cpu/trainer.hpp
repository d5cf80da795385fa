// Real training on Fashion-MNIST with the cpu executor: shuffled mini-batches, test
// accuracy after every epoch, a DAWNBench-style TSV log and the measured time to a target
// test accuracy. Used by `xpusim train` and by the cpu_train test.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "devices/cpu/executor.hpp"

namespace xpusim::cpu {

struct TrainOptions {
  std::string model = "fashion_cnn";
  std::string dataset = "fashion-mnist";
  std::string data_dir;            // empty = Debian's install location
  double target_accuracy = 0.90;
  int epochs_max = 10;
  int64_t batch = 64;
  std::string precision = "fp32";
  std::string optimizer;           // empty = the model's recipe
  double lr = 0;                   // 0 = default for the optimizer (see trainer.cpp)
  uint64_t seed = 1;
  int threads = 0;
  Bf16Path bf16_path = Bf16Path::automatic;  // bf16 only: native where the CPU has it
  int64_t train_limit = 0;         // use only the first N training images (0 = all)
  int64_t test_limit = 0;          // evaluate on the first N test images (0 = all 10,000)
  std::string log_path;            // TSV log; empty = none
  bool overwrite_log = false;      // replace an existing non-empty log or checkpoint (else an error)
  bool progress = true;
  // Directory for a checkpoint written after every epoch (empty = none); with `resume`, a
  // checkpoint found there is continued from its last finished epoch (checkpoint.hpp).
  std::string checkpoint_dir;
  bool resume = false;
  // Set asynchronously (SIGINT/SIGTERM) to stop after the current step: the result then
  // holds the finished epochs and `interrupted`, and the log keeps them.
  const std::atomic<bool>* stop = nullptr;
};

struct EpochRecord {
  int epoch = 0;
  double seconds = 0;        // cumulative wall time since training started (incl. evaluation)
  double train_loss = 0;     // mean over the epoch's steps
  double test_accuracy = 0;  // on the test images (all 10,000 unless test_limit)
};

struct TrainResult {
  TrainOptions options;
  std::string optimizer;
  double lr = 0;
  int threads = 0;
  std::string bf16_mode;    // off | native | emulated
  std::string bf16_detail;  // what that means on this CPU
  std::string isa;          // oneDNN's ISA for this CPU
  int64_t train_images = 0;
  int64_t test_images = 0;
  std::vector<EpochRecord> epochs;
  bool reached_target = false;
  int epochs_to_target = 0;        // 0 when not reached
  double time_to_target_s = 0;     // 0 when not reached
  double seconds_per_epoch = 0;    // mean training+evaluation time of one epoch
  int64_t peak_rss_bytes = 0;
  bool interrupted = false;        // stopped by TrainOptions::stop
  int stopped_epoch = 0;           // the epoch that was running when stopped
  int64_t stopped_step = 0;        // steps of that epoch already done
  int resumed_after_epoch = 0;     // epochs taken from a checkpoint (0 = a fresh run)
};

// Throws UserError for bad options (naming the field; for a checkpoint written with other
// options, the first field that differs) and when the loss becomes NaN/Inf (naming the
// epoch and step), UnavailableError when the dataset is not installed.
TrainResult train_fashion_mnist(const TrainOptions& o);

}  // namespace xpusim::cpu
