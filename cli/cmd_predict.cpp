// `xpusim predict`: predicted step time, throughput, memory and bottleneck of one model on
// one placement, from the engine the device YAML names (tpu_systemc or analytical).
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "common/file_guard.hpp"
#include "cli/explain_output.hpp"
#include "cli/step_report_output.hpp"
#include "common/error.hpp"
#include "predict/explain.hpp"
#include "predict/predict.hpp"

namespace xpusim::cli {

void register_predict(CLI::App& app) {
  auto r = std::make_shared<PredictRequest>();
  auto data = std::make_shared<std::string>("synthetic");
  auto build = std::make_shared<std::string>();
  auto fmt = std::make_shared<std::string>();
  auto task = std::make_shared<std::string>("train");
  auto explain = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("predict", "predict a training step (or an inference pass, --task inference) of a model on a device (simulated, not run)");
  cmd->add_option("--device", r->placement.device, "device name (configs/devices/) or YAML path")->required();
  cmd->add_option("--count", r->placement.count,
                  "devices: GPUs, TPU cores (v2-8 = 8) or vCPUs of one CPU machine")
      ->capture_default_str()
      ->check(int_in(1, kMaxDevices));
  cmd->add_option("--system", r->placement.system, "system (configs/systems/); default: the device's");
  cmd->add_option("--build", *build, "CPU devices: framework build, pip (no AVX2/FMA) or compiled");
  cmd->add_option("--framework", r->placement.framework,
                  "framework profile (configs/frameworks/) or a name it lists; default: the calibration stack");
  auto shapes = std::make_shared<std::vector<std::string>>();
  add_model_options(*cmd, r->model, *shapes);
  cmd->add_option("--batch", r->batch_per_device,
                  "batch per device (per GPU, per TPU core, per CPU machine), as the reference CSV's batch_per_device")
      ->capture_default_str()
      ->check(int_in(1, kMaxBatch));
  cmd->add_option("--seq-len", r->seq_len,
                  "Transformers: tokens per sequence, as the reference CSV's seq_len (default: the model file's input)")
      ->check(int_in(1, 1 << 24));
  cmd->add_option("--dataset", r->dataset,
                  "real data: the dataset the samples come from (configs/datasets.yaml; default: the model file's), "
                  "e.g. wikipedia_bookcorpus for BERT pre-training's corpus");
  cmd->add_option("--global-batch", r->global_batch,
                  "samples per optimizer step over all devices: a multiple of --batch x data-parallel devices, the "
                  "rest gradient accumulation (analytical engine; default: one micro-batch per step)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--precision", r->precision, precision_choices())->capture_default_str();
  cmd->add_option("--data", *data, "synthetic (no input pipeline) or real (host decode + augmentation)")
      ->capture_default_str();
  cmd->add_option("--optimizer", r->optimizer, "sgd_momentum|adam (default: the model's recipe)");
  cmd->add_option("--task", *task, "train (one training step) or inference (one forward pass: no backward, no update)")->capture_default_str();
  cmd->add_flag("--explain", *explain,
               "instead of the step report: every op's price split into math, memory and launch, with the kernel "
               "model's tile, waves and wave/tile efficiency (analytical engine; docs/gpu_model.md)");
  cmd->add_option("--set", r->placement.overrides, "override a device YAML field, KEY=VALUE (repeatable)");
  cmd->add_option("--trace", r->trace_path,
                  "write a Chrome/Perfetto trace-event JSON of one step, gzipped for a .json.gz path (tpu_systemc: every core simulated, a track per unit; analytical: an estimated per-op timeline, compute/memory/communication tracks per device)");
  cmd->add_option("--vcd", r->vcd_path,
                  "write a VCD waveform (GTKWave) of the simulated steps: every core's unit busy flags and queue depths (tpu_systemc)");
  add_format_option(*cmd, *fmt, "table|json|csv", "table");
  cmd->callback([r, data, build, fmt, task, shapes, explain] {
    for (const auto& s : *shapes) parse_input_shape(s, r->onnx);
    OutputFormat f = parse_output_format(*fmt, {OutputFormat::table, OutputFormat::json, OutputFormat::csv});
    if (!parse_data_source(*data, r->data)) throw UserError("--data: '" + *data + "' is not synthetic or real");
    if (!build->empty()) {
      CpuBuild b;
      if (!parse_cpu_build(*build, b)) throw UserError("--build: '" + *build + "' is not pip or compiled");
      r->placement.build = b;
    }
    r->task = task_from_name(*task);
    // Two outputs to one file kept only one of them; an output over the model destroyed it.
    refuse_shared_outputs({{"--trace", r->trace_path}, {"--vcd", r->vcd_path}});
    refuse_output_over_input("--trace", r->trace_path, {r->model});
    refuse_output_over_input("--vcd", r->vcd_path, {r->model});
    if (*explain) {
      print_explain(std::cout, explain_request(*r), f);
      return;
    }
    StepReport rep = predict(*r);
    print_step_report(std::cout, rep, f);
  });
}

}  // namespace xpusim::cli
