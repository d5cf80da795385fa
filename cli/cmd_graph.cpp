// `xpusim graph`: the op graph of a model (forward, or a whole training step) with per-op
// work and totals; `--chakra DIR` also writes it as Chakra execution traces for ASTRA-sim
// (models/chakra_export.hpp), timed by the analytical engine when a --device is given.
#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "common/error.hpp"
#include "common/output.hpp"
#include "common/records.hpp"
#include "devices/analytical/engine.hpp"
#include "models/chakra_export.hpp"
#include "models/graph_record.hpp"
#include "models/work.hpp"
#include "models/zoo.hpp"
#include "predict/predict.hpp"

namespace xpusim::cli {

namespace {
struct GraphArgs {
  std::string model;
  std::vector<std::string> input_shapes;
  long long batch = 32;
  bool train = false;
  std::string precision = "fp32";
  std::string optimizer;
  std::string format = "table";
  bool totals_only = false;
  std::string task = "train";
  std::string chakra_dir;
  int count = 1;
  std::string device, system, framework;
};
}  // namespace

void register_graph(CLI::App& app) {
  auto a = std::make_shared<GraphArgs>();
  auto* cmd = app.add_subcommand("graph", "op graph of one step of a model: per-op FLOPs, bytes, and totals");
  add_model_options(*cmd, a->model, a->input_shapes);
  cmd->add_option("--batch", a->batch, "batch size (samples per step)")->capture_default_str()->check(int_in(1, kMaxBatch));
  cmd->add_flag("--train", a->train, "list the ops of the whole training step (forward, backward, update)");
  cmd->add_option("--precision", a->precision, std::string("fp32|bf16|mixed (") + precision_choices() + ")")
      ->capture_default_str();
  cmd->add_option("--optimizer", a->optimizer, "sgd_momentum|adam (default: the model's recipe)");
  cmd->add_flag("--totals", a->totals_only, "print the totals only, no per-op rows");
  cmd->add_option("--task", a->task,
                  "train (totals of the training step) or inference (the forward pass only: no labels, loss, "
                  "backward or update)")
      ->capture_default_str();
  cmd->add_option("--chakra", a->chakra_dir,
                  "also write the step's op graph as Chakra execution traces for ASTRA-sim, DIR/<model>.<rank>.et "
                  "(one per data-parallel rank; docs/outputs.md)");
  cmd->add_option("--count", a->count,
                  "data-parallel devices: > 1 adds one gradient all-reduce per weight (Chakra COMM_COLL_NODEs)")
      ->capture_default_str()
      ->check(int_in(1, kMaxDevices));
  cmd->add_option("--device", a->device,
                  "--chakra: time each compute op with the analytical engine on this device (default: durations 0, "
                  "left to ASTRA-sim's roofline)");
  cmd->add_option("--system", a->system, "with --device: the system (default: the device's)");
  cmd->add_option("--framework", a->framework, "with --device: the framework profile (default: neutral)");
  add_format_option(*cmd, a->format, "table|json|csv", "table");
  cmd->callback([a] {
    OutputFormat f = parse_output_format(a->format, {OutputFormat::table, OutputFormat::json, OutputFormat::csv});
    if (a->batch <= 0) throw UserError("--batch: must be > 0, got " + std::to_string(a->batch));
    GraphOptions o;
    o.batch = a->batch;
    if (!parse_precision(a->precision, o.precision))
      throw UserError("--precision: unknown precision '" + a->precision + "' (one of " + precision_choices() + ")");
    OnnxImportOptions onnx;
    for (const auto& s : a->input_shapes) parse_input_shape(s, onnx);
    ModelSpec spec = find_model(a->model, onnx);
    std::string opt = a->optimizer.empty() ? spec.optimizer : a->optimizer;
    if (!parse_optimizer(opt, o.training_options.optimizer))
      throw UserError("--optimizer: unknown optimizer '" + opt + "' (sgd_momentum|adam)");
    o.task = task_from_name(a->task);
    o.training = true;  // totals always cover the training step (or the inference pass); --train lists its ops
    o.training_options.replicas = a->count;
    if (a->chakra_dir.empty() && (!a->device.empty() || !a->system.empty() || !a->framework.empty()))
      throw UserError("--device, --system and --framework time the ops of a --chakra export; give --chakra DIR");
    std::optional<PreparedRequest> timed;
    if (!a->device.empty()) {
      // The same request predict would run: its placement decides the replicas (a CPU
      // machine's vCPUs are one worker) and its graph options the graph.
      PredictRequest r;
      r.model = a->model;
      r.onnx = onnx;
      r.batch_per_device = a->batch;
      r.precision = a->precision;
      r.task = o.task;
      r.optimizer = a->optimizer;
      r.placement.device = a->device;
      r.placement.system = a->system;
      r.placement.framework = a->framework;
      r.placement.count = a->count;
      const std::string engine = engine_for_device(a->device);  // before loading any engine module
      if (engine != "analytical")
        throw UserError("--device: '" + a->device + "' runs on the " + engine +
                        " engine; Chakra op durations come from the analytical engine (GPU and CPU devices)");
      timed = prepare_request(r);
      o = timed->options;
    }
    OpGraph g = build_graph(spec, o);
    if (!a->chakra_dir.empty()) {
      const std::vector<double> times = timed ? analytical::op_times_s(g, timed->placement) : std::vector<double>{};
      const int ranks = o.training_options.replicas;
      const auto paths = write_chakra_traces(a->chakra_dir, spec.name, g, times, ranks);
      int colls = 0;
      for (int i = 0; i < g.num_ops(); ++i) colls += g.op(i).kind == OpKind::AllReduce;
      std::cerr << "chakra: wrote " << paths.size() << " execution trace" << (paths.size() == 1 ? "" : "s") << " ("
                << g.num_ops() << " nodes each, " << colls << " all-reduce) to " << a->chakra_dir << "/"
                << chakra_file_stem(spec.name) << ".<rank>.et\n";
    }
    GraphTotals t = graph_totals(g);
    std::vector<int> shown;
    for (int i = 0; i < g.num_ops(); ++i)
      if (a->train || g.op(i).phase == Phase::forward) shown.push_back(i);

    // JSON and CSV from the same records (models/graph_record.hpp, shared with the Python
    // module): the totals (one row) and the ops (one row each).
    if (f == OutputFormat::json || f == OutputFormat::csv) {
      nlohmann::json ops = a->totals_only ? nlohmann::json::array() : graph_op_records(g, a->train);
      nlohmann::json j = graph_summary_record(g, spec.name, o);
      if (f == OutputFormat::csv) {
        if (a->totals_only) print_csv_records(std::cout, nlohmann::json::array({j}), {"model", "batch", "precision"});
        else print_csv_records(std::cout, ops, {"name", "kind", "phase"});
        return;
      }
      if (!spec.notes.empty()) j["notes"] = spec.notes;
      j["ops"] = ops;
      print_json_document(std::cout, j);
      return;
    }
    if (!a->totals_only) {
      Table ops{{"op", "kind", "phase", "output_shape", "gflops", "bytes_read", "bytes_written"}};
      for (int i : shown) {
        const OpNode& op = g.op(i);
        ops.add({op.name, op_kind_name(op.kind), phase_name(op.phase),
                 op.outputs.empty() ? "" : shape_str(g.tensor(op.outputs[0]).desc.shape),
                 fmt_fixed(op.work.flops / 1e9, 6), fmt_int(op.work.bytes_read), fmt_int(op.work.bytes_written)});
      }
      ops.print(std::cout, f);
      std::cout << "\n";
    }
    Table tot{{"total", "value"}};
    tot.right_align = {false, true};
    tot.add({"model", spec.name});
    tot.add({"batch", fmt_int(a->batch)});
    tot.add({"precision", precision_name(o.precision)});
    if (o.task == Task::inference) tot.add({"task", task_name(o.task)});
    tot.add({"params", fmt_int(t.params)});
    tot.add({"gflops_forward", fmt_fixed(t.flops_forward / 1e9, 3)});
    tot.add({"gflops_train_step", fmt_fixed(t.flops_train_step / 1e9, 3)});
    tot.add({"activation_bytes", fmt_int(t.activation_bytes) + " (" + fmt_bytes(t.activation_bytes) + ")"});
    tot.add({"weight_bytes", fmt_int(t.weight_bytes)});
    tot.add({"optimizer_state_bytes", fmt_int(t.optimizer_state_bytes)});
    tot.add({"peak_memory_bytes", fmt_int(t.peak_bytes) + " (" + fmt_bytes(t.peak_bytes) + ")"});
    tot.add({"ops_train_step", fmt_int(t.num_ops)});
    for (const auto& note : spec.notes) tot.add({"note", note});
    tot.print(std::cout, f);
  });
}

}  // namespace xpusim::cli
