// `xpusim train`: real training on Fashion-MNIST with the cpu backend until a target test
// accuracy, with a per-epoch TSV log and the measured time-to-accuracy (DAWNBench style).
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "common/error.hpp"
#include "common/output.hpp"
#include "common/records.hpp"
#include "devices/cpu/checkpoint.hpp"
#include "devices/cpu/trainer.hpp"

namespace xpusim::cli {

namespace {

nlohmann::json train_json(const cpu::TrainResult& r) {
  nlohmann::json j;
  j["backend"] = "cpu";
  j["model"] = r.options.model;
  j["dataset"] = "fashion-mnist";
  j["precision"] = r.options.precision;
  j["bf16_mode"] = r.bf16_mode;
  j["bf16_detail"] = r.bf16_detail;
  j["isa"] = r.isa;
  j["optimizer"] = r.optimizer;
  j["lr"] = r.lr;
  j["batch"] = r.options.batch;
  j["seed"] = r.options.seed;
  j["threads"] = r.threads;
  j["train_images"] = r.train_images;
  j["test_images"] = r.test_images;
  j["target_accuracy"] = r.options.target_accuracy;
  j["reached_target"] = r.reached_target;
  j["epochs_to_target"] = r.epochs_to_target;
  j["time_to_target_s"] = r.time_to_target_s;
  j["seconds_per_epoch"] = r.seconds_per_epoch;
  if (r.epochs.empty()) j["final_test_accuracy"] = nullptr;
  else j["final_test_accuracy"] = r.epochs.back().test_accuracy;
  j["interrupted"] = r.interrupted;
  j["resumed_after_epoch"] = r.resumed_after_epoch;
  j["peak_rss_bytes"] = r.peak_rss_bytes;
  nlohmann::json e = nlohmann::json::array();
  for (const auto& x : r.epochs)
    e.push_back({{"epoch", x.epoch}, {"seconds", x.seconds}, {"train_loss", x.train_loss}, {"test_accuracy", x.test_accuracy}});
  j["epochs"] = e;
  return j;
}

}  // namespace

void register_train(CLI::App& app) {
  auto o = std::make_shared<cpu::TrainOptions>();
  auto backend = std::make_shared<std::string>("cpu");
  auto fmt = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("train", "train a model for real to a target test accuracy (cpu backend, Fashion-MNIST)");
  cmd->add_option("--backend", *backend, "cpu")->capture_default_str();
  cmd->add_option("--model", o->model, "zoo model taking 1x28x28 images, 10 classes")->capture_default_str();
  cmd->add_option("--dataset", o->dataset, "fashion-mnist")->capture_default_str();
  cmd->add_option("--data-dir", o->data_dir, "dataset directory (default: Debian's /usr/share/datasets/fashion-mnist)");
  cmd->add_option("--target-accuracy", o->target_accuracy, "stop at this test accuracy")->capture_default_str()->check(finite_in(0, 1));
  cmd->add_option("--epochs-max", o->epochs_max, "give up after this many epochs")->capture_default_str()->check(int_in(1, 100000));
  cmd->add_option("--batch", o->batch, "mini-batch size")->capture_default_str()->check(int_in(1, kMaxBatch));
  cmd->add_option("--precision", o->precision, "fp32|bf16")->capture_default_str();
  cmd->add_option("--optimizer", o->optimizer, "sgd_momentum|adam (default: the model's recipe)");
  cmd->add_option("--lr", o->lr, "learning rate (default: 0.01 SGD momentum, 0.001 Adam)")->check(finite_in(0, 1e6));
  cmd->add_option("--seed", o->seed, "seed for weights, shuffling and dropout")->capture_default_str()->check(uint64_any());
  cmd->add_option("--threads", o->threads, "threads (0 = all cores)")->capture_default_str()->check(int_in(0, 1024));
  cmd->add_option("--train-limit", o->train_limit, "use only the first N training images (0 = all)")
      ->capture_default_str()
      ->check(int_in(0, kMaxBatch));
  cmd->add_option("--test-limit", o->test_limit, "evaluate on the first N test images (0 = all)")
      ->capture_default_str()
      ->check(int_in(0, kMaxBatch));
  cmd->add_option("--log", o->log_path, "write a TSV log: epoch, seconds, train_loss, test_accuracy (one line per finished epoch)");
  cmd->add_flag("--overwrite", o->overwrite_log,
                "replace an existing --log file or --checkpoint (otherwise an existing one is an error)");
  cmd->add_option("--checkpoint", o->checkpoint_dir,
                  "directory for a checkpoint written after every epoch (weights, optimizer, RNG, data order, log)");
  cmd->add_flag("--resume", o->resume,
                "continue from the checkpoint in --checkpoint DIR (its last finished epoch); same result as an "
                "uninterrupted run");
  add_format_option(*cmd, *fmt, "table|json|csv", "table");
  cmd->callback([o, backend, fmt, cmd] {
    OutputFormat f = parse_output_format(*fmt, {OutputFormat::table, OutputFormat::json, OutputFormat::csv});
    // lr 0 is the trainer's "the recipe's default": an explicit --lr 0 trained at 0.01 instead.
    if (cmd->count("--lr") > 0 && !(o->lr > 0))
      throw UserError("--lr: must be > 0 (leave --lr out for the recipe's default)");
    if (*backend != "cpu") throw UserError("--backend: training runs on the cpu backend only, not '" + *backend + "'");
    if (o->resume && o->checkpoint_dir.empty()) throw UserError("--resume: needs --checkpoint DIR (the checkpoint to continue)");
    if (!o->checkpoint_dir.empty() && !o->resume && !o->overwrite_log &&
        std::filesystem::exists(cpu::checkpoint_path(o->checkpoint_dir)))
      throw UserError("--checkpoint: " + o->checkpoint_dir +
                      " holds a checkpoint of an earlier run: continue it with --resume, or replace it with --overwrite");
    // Ctrl-C (or SIGTERM) stops after the current step: finished epochs are printed and
    // stay in the log, and the exit code is 130. A second Ctrl-C kills as usual.
    StopOnSignal guard;
    o->stop = &guard.flag();
    cpu::TrainResult r = [&] {
      try {
        return cpu::train_fashion_mnist(*o);
      } catch (const UnavailableError& e) {  // the library names the field; here its flag
        std::string m = e.what();
        const std::string field = "(data_dir)";
        if (m.size() > field.size() && m.compare(m.size() - field.size(), field.size(), field) == 0)
          m.replace(m.size() - field.size(), field.size(), "(--data-dir)");
        throw UnavailableError(m);
      }
    }();
    o->stop = nullptr;
    auto report_interrupt = [&] {
      if (!r.interrupted) return;
      throw InterruptedError("train stopped in epoch " + std::to_string(r.stopped_epoch) + " after " +
                             std::to_string(r.stopped_step) + " steps; " + std::to_string(r.epochs.size()) +
                             " finished epochs shown" + (o->log_path.empty() ? "" : " and kept in " + o->log_path) +
                             (o->checkpoint_dir.empty() ? std::string()
                              // Before the first epoch ends no checkpoint exists: --resume
                              // would find nothing and refuse the log this run began.
                              : static_cast<int>(r.epochs.size()) > r.resumed_after_epoch || r.resumed_after_epoch > 0
                                  ? "; continue with --resume (checkpoint in " + o->checkpoint_dir + ")"
                                  : "; no epoch finished, so no checkpoint was written: start again" +
                                        std::string(o->log_path.empty() ? "" : " with --overwrite (the log holds only its header)")));
    };
    if (f == OutputFormat::json) {
      print_json_document(std::cout, train_json(r));
      report_interrupt();
      return;
    }
    if (f == OutputFormat::csv) {  // one row per finished epoch, the JSON's `epochs`
      print_csv_records(std::cout, train_json(r)["epochs"], {"epoch"});
      report_interrupt();
      return;
    }
    Table t({"epoch", "seconds", "train_loss", "test_accuracy"});
    for (const auto& e : r.epochs)
      t.add({std::to_string(e.epoch), fmt_fixed(e.seconds, 2), fmt_sig(e.train_loss, 4), fmt_fixed(e.test_accuracy, 4)});
    t.print(std::cout, f);
    if (f == OutputFormat::table)
      std::cout << (r.reached_target ? "reached " : "did not reach ") << fmt_fixed(r.options.target_accuracy, 3)
                << (r.reached_target ? " after " + std::to_string(r.epochs_to_target) + " epochs, " +
                                           fmt_fixed(r.time_to_target_s, 1) + " s"
                                     : " in " + std::to_string(r.epochs.size()) + " epochs")
                << "\n";
    report_interrupt();
  });
}

}  // namespace xpusim::cli
