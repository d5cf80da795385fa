// Inference (--task inference): the forward-only graph (no labels, loss, dropout, backward,
// all-reduce or update), its memory figure, and every simulated engine's step for it against
// the training step of the same placement.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>

#include "common/error.hpp"
#include "compare/compare.hpp"
#include "models/inference.hpp"
#include "models/work.hpp"
#include "models/zoo.hpp"
#include "predict/predict.hpp"
#include "tests/unit/predict_request.hpp"
#include "sweep/sweep_spec.hpp"
#include "validation/metrics.hpp"
#include "validation/reference_csv.hpp"
#include "validation/validate.hpp"
#include "xpusim_test_paths.hpp"

using namespace xpusim;

namespace {

OpGraph graph_of(const std::string& model, int64_t batch, Task task, Precision p = Precision::fp32) {
  GraphOptions o;
  o.batch = batch;
  o.precision = p;
  o.task = task;
  return build_graph(find_model(model), o);
}

// What an inference graph must not hold, whatever the model.
void check_forward_only(const OpGraph& g) {
  CHECK(g.task == Task::inference);
  CHECK_FALSE(g.is_training_step);
  for (int i = 0; i < g.num_ops(); ++i) {
    const OpNode& op = g.op(i);
    INFO(op.name);
    CHECK(op.phase == Phase::forward);
    CHECK(op.kind != OpKind::SoftmaxCrossEntropy);
    CHECK(op.kind != OpKind::Dropout);
    CHECK(op.kind != OpKind::AllReduce);
    CHECK(op.kind != OpKind::SGDMomentumUpdate);
    CHECK(op.kind != OpKind::AdamUpdate);
  }
  for (int t = 0; t < g.num_tensors(); ++t) {
    const TensorRole r = g.tensor(t).role;
    INFO(g.tensor(t).name);
    CHECK(r != TensorRole::label);
    CHECK(r != TensorRole::loss);
    CHECK(r != TensorRole::weight_grad);
    CHECK(r != TensorRole::activation_grad);
    CHECK(r != TensorRole::optimizer_state);
  }
  // Every op reads only weights and values of earlier ops: the schedule is still a valid order.
  for (int i = 0; i < g.num_ops(); ++i)
    for (int t : g.op(i).inputs) CHECK(g.tensor(t).producer < i);
}

PredictRequest request(const std::string& model, const std::string& device, int count, int64_t batch,
                       const std::string& precision, Task task) {
  PredictRequest r = fixtures::predict_request(device, count, model, batch, precision);
  r.task = task;
  return r;
}

}  // namespace

TEST_CASE("task names parse and a bad one is a field error naming task", "[inference]") {
  Task t = Task::train;
  CHECK(parse_task("inference", t));
  CHECK(t == Task::inference);
  CHECK(parse_task("train", t));
  CHECK(t == Task::train);
  CHECK_FALSE(parse_task("eval", t));
  try {
    task_from_name("training");
    FAIL("no error");
  } catch (const FieldError& e) {
    CHECK(e.field() == "task");
    CHECK_THAT(e.message(), Catch::Contains("train|inference"));
  }
}

TEST_CASE("the inference graph is the forward pass only", "[inference]") {
  for (const char* model : {"resnet50", "gnmt", "vgg16", "inception_v3", "mnist_mlp", "bert_base", "gpt2",
                            "bert_large_pretraining"}) {
    INFO(model);
    OpGraph inf = graph_of(model, 4, Task::inference);
    check_forward_only(inf);
    // Only the images / token ids are fed: no labels.
    int inputs = 0;
    for (int i = 0; i < inf.num_ops(); ++i)
      if (inf.op(i).kind == OpKind::Input) {
        ++inputs;
        for (int t : inf.op(i).outputs) CHECK(inf.tensor(t).role == TensorRole::input);
      }
    CHECK(inputs == 1);
  }
}

TEST_CASE("inference keeps the main head's work and drops what only training needs", "[inference]") {
  // ResNet-50: the same parameters and the same conv/matmul FLOPs as the training step's
  // forward pass; batch norm costs 2 FLOPs per element (running statistics) instead of 7.
  OpGraph train = graph_of("resnet50", 8, Task::train);
  OpGraph inf = graph_of("resnet50", 8, Task::inference);
  GraphTotals tt = graph_totals(train), ti = graph_totals(inf);
  CHECK(ti.params == tt.params);
  auto gemm_flops = [](const OpGraph& g) {
    double f = 0;
    for (int i = 0; i < g.num_ops(); ++i)
      if (g.op(i).phase == Phase::forward && (g.op(i).kind == OpKind::Conv2D || g.op(i).kind == OpKind::MatMul))
        f += g.op(i).work.flops;
    return f;
  };
  CHECK(gemm_flops(inf) == Approx(gemm_flops(train)).epsilon(1e-12));
  double bn_train = 0, bn_inf = 0, bn_elems = 0;
  for (int i = 0; i < train.num_ops(); ++i)
    if (train.op(i).kind == OpKind::BatchNorm) bn_train += train.op(i).work.flops;
  for (int i = 0; i < inf.num_ops(); ++i)
    if (inf.op(i).kind == OpKind::BatchNorm) {
      bn_inf += inf.op(i).work.flops;
      bn_elems += static_cast<double>(inf.tensor(inf.op(i).inputs[0]).desc.numel());
    }
  CHECK(bn_inf == Approx(2.0 * bn_elems));
  CHECK(bn_train == Approx(7.0 * bn_elems));
  CHECK(ti.flops_backward == 0);
  CHECK(ti.flops_update == 0);
  CHECK(ti.flops_train_step == Approx(ti.flops_forward));
  CHECK(ti.flops_forward < tt.flops_forward);  // no loss, cheaper batch norm

  // Inception v3: the auxiliary classifier exists only for training; inference drops it
  // with its weights.
  GraphTotals it = graph_totals(graph_of("inception_v3", 2, Task::train));
  GraphTotals ii = graph_totals(graph_of("inception_v3", 2, Task::inference));
  CHECK(ii.params < it.params);
  OpGraph inc = graph_of("inception_v3", 2, Task::inference);
  for (int i = 0; i < inc.num_ops(); ++i) CHECK(inc.op(i).name.rfind("AuxLogits", 0) == std::string::npos);

  // BERT pre-training: both heads (masked LM and next sentence) are outputs of the model in
  // eval mode too, so inference keeps both and only the losses go.
  OpGraph bp = graph_of("bert_large_pretraining", 2, Task::inference);
  int heads = 0;
  for (int i = 0; i < bp.num_ops(); ++i)
    if (bp.op(i).name == "head.mlm.decoder" || bp.op(i).name == "head.nsp") ++heads;
  CHECK(heads == 2);

  // VGG-16: dropout is the identity, so the op after each dropout reads the dropout's input.
  GraphOptions fo;
  fo.batch = 2;
  fo.training = false;
  OpGraph fwd = build_graph(find_model("vgg16"), fo);
  OpGraph vgg = graph_of("vgg16", 2, Task::inference);
  int dropouts = 0;
  for (int i = 0; i < fwd.num_ops(); ++i) {
    const OpNode& d = fwd.op(i);
    if (d.kind != OpKind::Dropout) continue;
    ++dropouts;
    const std::string in_name = fwd.tensor(d.inputs[0]).name;
    for (int c : fwd.consumers(d.outputs[0])) {
      INFO(fwd.op(c).name);
      bool found = false;
      for (int j = 0; j < vgg.num_ops(); ++j)
        if (vgg.op(j).name == fwd.op(c).name) {
          found = true;
          CHECK(vgg.tensor(vgg.op(j).inputs[0]).name == in_name);
        }
      CHECK(found);
    }
  }
  CHECK(dropouts == 2);
}

TEST_CASE("inference memory: weights in the compute type, live activations, input; no gradients", "[inference]") {
  for (const char* model : {"resnet50", "gnmt", "bert_base"}) {
    INFO(model);
    GraphTotals tr = graph_totals(graph_of(model, 32, Task::train));
    GraphTotals in = graph_totals(graph_of(model, 32, Task::inference));
    CHECK(in.weight_grad_bytes == 0);
    CHECK(in.optimizer_state_bytes == 0);
    CHECK(in.activation_bytes == 0);  // nothing is saved for a backward pass
    CHECK(in.low_precision_weight_bytes == 0);
    CHECK(in.weight_bytes == in.params * 4);
    CHECK(in.peak_bytes < tr.peak_bytes);
    CHECK(in.input_bytes < tr.input_bytes);  // no labels
    // bf16: the model is held in bf16 only (no fp32 master copy).
    GraphTotals b = graph_totals(graph_of(model, 32, Task::inference, Precision::bf16));
    CHECK(b.weight_bytes == b.params * 2);
    CHECK(b.low_precision_weight_bytes == 0);
  }
}

TEST_CASE("inference peak memory of mnist_mlp, derived by hand", "[inference]") {
  // 784-512-512-10 MLP, fp32, batch 8. Schedule: input, flatten (a view), then dense and
  // relu ops. A tensor lives from its producer to its last reader; the flatten view carries
  // no bytes, so the images are freed once the view is taken (work.cpp's rule). The peak is
  // two [8, 512] fp32 tensors alive at once (a dense output and its relu), or the images
  // alone if those are larger.
  OpGraph g = graph_of("mnist_mlp", 8, Task::inference);
  GraphTotals t = graph_totals(g);
  const int64_t images = 8 * 784 * 4;
  const int64_t hidden = 8 * 512 * 4;
  int relu_ops = 0;
  for (int i = 0; i < g.num_ops(); ++i)
    if (g.op(i).kind == OpKind::Activation) ++relu_ops;
  const int64_t activations = relu_ops > 0 ? std::max(images, 2 * hidden) : std::max(images, hidden);
  CHECK(t.params == 669706);
  CHECK(t.input_bytes == images);
  CHECK(t.peak_bytes == t.params * 4 + activations);
}

TEST_CASE("analytical engine: inference needs less memory and runs faster than training", "[inference][analytical]") {
  for (const char* device : {"a100_sxm4_40gb", "v100_sxm2_16gb"}) {
    for (const auto& [model, batch] :
         std::vector<std::pair<std::string, int64_t>>{{"resnet50", 64}, {"gnmt", 64}, {"bert_base", 32}}) {
      INFO(device << " " << model);
      StepReport tr = predict(request(model, device, 1, batch, "mixed_fp16", Task::train));
      StepReport in = predict(request(model, device, 1, batch, "mixed_fp16", Task::inference));
      CHECK(in.task == Task::inference);
      CHECK(tr.task == Task::train);
      CHECK(in.memory_bytes < tr.memory_bytes);
      CHECK(in.throughput_samples_per_s > tr.throughput_samples_per_s);
      // A forward pass is roughly a third of a training step's work: well above 1.5x faster.
      CHECK(in.throughput_samples_per_s > 1.5 * tr.throughput_samples_per_s);
      CHECK(in.fits_in_memory);
      CHECK(in.step_time_s == Approx(static_cast<double>(in.global_batch) / in.throughput_samples_per_s));
      CHECK(in.per_op_s.count("conv2d_backward_data") == 0);
      CHECK(in.per_op_s.count("softmax_cross_entropy") == 0);
      nlohmann::json j = in.to_json();
      CHECK(j.at("task") == "inference");
      CHECK_FALSE(tr.to_json().contains("task"));
    }
  }
}

TEST_CASE("data-parallel inference exchanges nothing", "[inference][analytical]") {
  PredictRequest r1 = request("resnet50", "v100_sxm2_16gb", 1, 64, "mixed_fp16", Task::inference);
  r1.placement.system = "dgx1v_nvlink";
  PredictRequest r8 = r1;
  r8.placement.count = 8;
  StepReport one = predict(r1);
  StepReport eight = predict(r8);
  CHECK(eight.extra.at("communication_busy_s").get<double>() == 0);
  CHECK(eight.extra.at("communication_exposed_s").get<double>() == 0);
  CHECK(eight.global_batch == 8 * 64);
  CHECK(eight.throughput_samples_per_s == Approx(8 * one.throughput_samples_per_s).epsilon(0.01));
  r8.task = Task::train;
  StepReport train8 = predict(r8);
  CHECK(train8.extra.at("communication_busy_s").get<double>() > 0);
  // Keras multi_gpu_model gathers gradients on one GPU and holds an extra weight copy there:
  // neither happens in an inference pass.
  PredictRequest k = request("resnet50", "v100_sxm2_16gb", 4, 32, "fp32", Task::inference);
  k.placement.framework = "keras_tf1_13_gpu";
  StepReport kin = predict(k);
  CHECK(kin.extra.at("communication_exposed_s").get<double>() == 0);
  k.task = Task::train;
  StepReport ktr = predict(k);
  CHECK(ktr.extra.at("communication_exposed_s").get<double>() > 0);
  CHECK(kin.extra.at("memory_framework_bytes").get<int64_t>() < ktr.extra.at("memory_framework_bytes").get<int64_t>());
}

TEST_CASE("tpu_systemc engine: inference needs less memory and runs faster than training", "[inference][tpu]") {
  for (const auto& [model, batch] :
       std::vector<std::pair<std::string, int64_t>>{{"resnet50", 128}, {"gnmt", 64}, {"bert_base", 32}}) {
    INFO(model);
    PredictRequest r = request(model, "tpu_v3", 8, batch, "bf16", Task::train);
    StepReport tr = predict(r);
    r.task = Task::inference;
    StepReport in = predict(r);
    CHECK(in.engine == "tpu_systemc");
    CHECK(in.task == Task::inference);
    CHECK(in.fits_in_memory);
    CHECK(in.memory_bytes < tr.memory_bytes);
    CHECK(in.throughput_samples_per_s > tr.throughput_samples_per_s);
    CHECK(in.step_time_s > 0);
    // No gradients to all-reduce: the ICI carries nothing.
    CHECK(in.extra.at("ici_bytes_per_step").get<double>() == 0);
    CHECK(tr.extra.at("ici_bytes_per_step").get<double>() > 0);
  }
}

TEST_CASE("validate: infer_throughput rows are predicted as inference passes", "[inference][validation]") {
  // tests/data/validation/inference_rows.csv: values are test inputs, not measurements (no
  // published inference rows exist in tests/data/reference).
  auto rows = validation::read_reference_csv(std::string(XPUSIM_TEST_DATA_DIR) + "/validation/inference_rows.csv");
  REQUIRE(rows.size() == 5);
  auto m = validation::parse_metric("infer_throughput");
  REQUIRE(m);
  CHECK(m->kind == validation::MetricKind::infer_throughput);
  validation::ValidationResult r = validation::validate_rows(rows, {}, "inference_rows.csv");
  REQUIRE(r.rows.size() == 5);
  for (int i = 0; i < 4; ++i) {
    INFO(r.rows[static_cast<size_t>(i)].reason);
    REQUIRE(r.rows[static_cast<size_t>(i)].used);
  }
  CHECK_FALSE(r.rows[4].used);
  CHECK_THAT(r.rows[4].reason, Catch::Contains("unit"));

  const double infer = predict(request("resnet50", "v100_sxm2_16gb", 1, 64, "mixed_fp16", Task::inference))
                           .throughput_samples_per_s;
  const double train = predict(request("resnet50", "v100_sxm2_16gb", 1, 64, "mixed_fp16", Task::train))
                           .throughput_samples_per_s;
  CHECK(*r.rows[0].predicted == Approx(infer));
  CHECK(*r.rows[1].predicted == Approx(train));
  CHECK(*r.rows[0].error_pct == Approx(100.0 * (infer - 3000) / 3000));
  PredictRequest tpu = request("resnet50", "tpu_v3", 8, 128, "bf16", Task::inference);
  tpu.placement.system = "cloud_tpu_v3-8";
  CHECK(r.rows[3].engine == "tpu_systemc");
  CHECK(*r.rows[3].predicted == Approx(predict(tpu).throughput_samples_per_s));
}

TEST_CASE("compare: a study option with task inference predicts forward passes", "[inference][costmodel]") {
  auto write = [](const std::string& name, const std::string& text) {
    std::string path = "/tmp/xpusim_test_inference_study_" + name + ".yaml";
    std::ofstream(path) << text;
    return path;
  };
  const std::string opts =
      "options:\n"
      "  - {label: inf, device: tpu_v2, count: 8, precision: bf16, batch: 128, offer: gcp_2018/cloud_tpu_v2-8,\n"
      "     throughput: predict, task: inference}\n"
      "  - {label: tr, device: tpu_v2, count: 8, precision: bf16, batch: 128, offer: gcp_2018/cloud_tpu_v2-8,\n"
      "     throughput: predict}\n";
  cost::Study s = cost::load_study(
      write("ok", "name: t\ntargets:\n  - {model: resnet50, dataset: imagenet, epochs: 1}\n" + opts));
  REQUIRE(s.options.size() == 2);
  CHECK(s.options[0].task == Task::inference);
  CHECK(s.options[1].task == Task::train);
  std::vector<Task> seen;
  cost::ThroughputFn fake = [&](const PredictRequest& r) {
    seen.push_back(r.task);
    StepReport rep;
    rep.global_batch = r.batch_per_device * r.placement.count;
    rep.throughput_samples_per_s = r.task == Task::inference ? 4000 : 1000;
    return rep;
  };
  cost::CompareResult res = cost::run_study(s, fake);
  REQUIRE(res.rows.size() == 2);
  CHECK(seen == std::vector<Task>{Task::inference, Task::train});
  CHECK(res.rows[0].to_json().at("task") == "inference");
  CHECK_FALSE(res.rows[1].to_json().contains("task"));
  // One pass over ImageNet's training set at 4x the training throughput: a quarter of the hours.
  REQUIRE(res.rows[0].hours_to_target);
  REQUIRE(res.rows[1].hours_to_target);
  CHECK(*res.rows[0].hours_to_target == Approx(*res.rows[1].hours_to_target / 4));

  // An accuracy is reached by training, never by inference: the study is refused at its key.
  try {
    cost::load_study(write("acc", "name: t\ntargets:\n  - {model: resnet50, dataset: imagenet, accuracy: 0.757}\n" + opts));
    FAIL("no error");
  } catch (const UserError& e) {
    CHECK_THAT(e.what(), Catch::Contains("task: inference reaches no accuracy"));
    CHECK_THAT(e.what(), Catch::Contains(".yaml:"));
  }
  try {
    cost::load_study(write("bad", "name: t\ntargets:\n  - {model: resnet50, dataset: imagenet, epochs: 1}\n"
                                  "options:\n  - {label: x, device: tpu_v2, count: 8, batch: 128,"
                                  " offer: gcp_2018/cloud_tpu_v2-8, throughput: predict, task: eval}\n"));
    FAIL("no error");
  } catch (const UserError& e) {
    CHECK_THAT(e.what(), Catch::Contains("task:"));
    CHECK_THAT(e.what(), Catch::Contains("eval"));
  }
}

TEST_CASE("sweep: task is an axis field", "[inference][sweep]") {
  sweep::PointRequest r;
  sweep::apply_assignment(r, "task", "inference");
  CHECK(r.predict.task == Task::inference);
  sweep::apply_assignment(r, "task", "train");
  CHECK(r.predict.task == Task::train);
  try {
    sweep::apply_assignment(r, "task", "serve");
    FAIL("no error");
  } catch (const FieldError& e) {
    CHECK(e.field() == "task");
  }
}
