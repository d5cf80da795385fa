// `xpusim run`: execute training steps for real on a backend (cpu, cuda) and time them,
// as tf_cnn_benchmarks does: warm-up steps excluded, mean of the timed steps.
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/step_report_output.hpp"
#include "common/error.hpp"
#include "predict/predict.hpp"

namespace xpusim::cli {

void register_run(CLI::App& app) {
  auto r = std::make_shared<PredictRequest>();
  auto data = std::make_shared<std::string>("synthetic");
  auto fmt = std::make_shared<std::string>();
  auto task = std::make_shared<std::string>("train");
  auto* cmd = app.add_subcommand("run", "run training steps (or inference passes, --task inference) for real on a backend and measure them");
  cmd->add_option("--backend", r->engine, "cpu or cuda (see xpusim backends)")->required();
  auto shapes = std::make_shared<std::vector<std::string>>();
  add_model_options(*cmd, r->model, *shapes);
  cmd->add_option("--batch", r->batch_per_device, "batch per device")->capture_default_str()->check(int_in(1, kMaxBatch));
  cmd->add_option("--steps", r->steps, "timed steps")->capture_default_str()->check(int_in(1, kMaxSteps));
  cmd->add_option("--warmup", r->warmup, "untimed warm-up steps")->capture_default_str()->check(int_in(0, kMaxSteps));
  cmd->add_option("--precision", r->precision, precision_choices())->capture_default_str();
  cmd->add_option("--gpus", r->placement.count, "cuda: GPUs in data parallel")->capture_default_str()->check(int_in(1, kMaxDevices));
  cmd->add_option("--threads", r->threads, "cpu: threads (0 = all cores)")->capture_default_str()->check(int_in(0, 1024));
  cmd->add_option("--seed", r->seed, "random seed for weights and data")->capture_default_str()->check(uint64_any());
  cmd->add_option("--optimizer", r->optimizer, "sgd_momentum|adam (default: the model's recipe)");
  cmd->add_option("--task", *task, "train (one training step) or inference (one forward pass: no backward, no update)")->capture_default_str();
  add_format_option(*cmd, *fmt, "table|json|csv", "table");
  cmd->callback([r, data, fmt, task, shapes] {
    for (const auto& s : *shapes) parse_input_shape(s, r->onnx);
    OutputFormat f = parse_output_format(*fmt, {OutputFormat::table, OutputFormat::json, OutputFormat::csv});
    if (r->engine != "cpu" && r->engine != "cuda")
      throw UserError("--backend: '" + r->engine + "' is not a real backend (cpu or cuda)");
    if (r->steps <= 0) throw UserError("--steps: must be > 0");
    if (r->warmup < 0) throw UserError("--warmup: must be >= 0");
    r->task = task_from_name(*task);
    r->placement.device = r->engine;
    alias_field_flag("count", "--gpus");
    r->progress = true;
    StepReport rep = predict(*r);
    print_step_report(std::cout, rep, f);
  });
}

}  // namespace xpusim::cli
