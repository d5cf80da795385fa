// cpu backend with --task inference: real forward passes of the inference graph (no backward,
// no update), timed and reported like training steps.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "common/error.hpp"
#include "devices/cpu/executor.hpp"
#include "models/work.hpp"
#include "models/zoo.hpp"
#include "predict/predict.hpp"
#include "tests/unit/cpu/cpu_request.hpp"


using namespace xpusim;
using namespace xpusim::cpu;

namespace {

PredictRequest cpu_request(const std::string& model, Task task) {
  PredictRequest r = test::cpu_run_request(model, 16, 2, 1, 1);
  r.task = task;
  return r;
}

}  // namespace

TEST_CASE("cpu run --task inference times forward passes only", "[cpu]") {
  StepReport in = predict(cpu_request("mnist_mlp", Task::inference));
  CHECK(in.engine == "cpu");
  CHECK(in.task == Task::inference);
  CHECK(in.to_json().at("task") == "inference");
  CHECK(in.step_time_s > 0);
  CHECK(in.throughput_samples_per_s == Approx(16 / in.step_time_s));
  CHECK_FALSE(in.extra.at("isa").get<std::string>().empty());
  CHECK_FALSE(in.extra.contains("loss_first"));
  CHECK_FALSE(in.extra.contains("train_step_flops"));
  // Only forward kinds ran (matmul and relu; the dropout of mnist_mlp is gone).
  CHECK(in.per_op_s.count("matmul") == 1);
  for (const char* k : {"activation_backward", "dropout", "dropout_backward", "softmax_cross_entropy",
                        "softmax_cross_entropy_backward", "sgd_momentum_update", "adam_update", "all_reduce"})
    CHECK(in.per_op_s.count(k) == 0);
  // The FLOPs of the timed pass are the inference graph's.
  GraphOptions o;
  o.batch = 16;
  o.task = Task::inference;
  GraphTotals t = graph_totals(build_graph(find_model("mnist_mlp"), o));
  CHECK(in.extra.at("inference_step_flops").get<double>() == Approx(t.flops_forward));

  StepReport tr = predict(cpu_request("mnist_mlp", Task::train));
  CHECK(tr.extra.contains("loss_first"));
  CHECK_FALSE(tr.to_json().contains("task"));
  // Fewer buffers: no gradients, no optimizer state, no labels or saved activations.
  CHECK(in.memory_bytes < tr.memory_bytes);
}

TEST_CASE("cpu executor runs an inference graph to finite, input-dependent logits", "[cpu]") {
  GraphOptions o;
  o.batch = 4;
  o.task = Task::inference;
  OpGraph g = build_graph(find_model("fashion_cnn"), o);
  ExecOptions eo;
  eo.threads = 1;
  Executor ex(g, eo);
  ex.fill_synthetic();
  ex.forward(false);
  // The output: the last op's first output (the logits of the classifier).
  const int logits = g.op(g.num_ops() - 1).outputs[0];
  std::vector<float> y = ex.read(logits);
  REQUIRE(y.size() == static_cast<size_t>(4 * 10));
  std::set<float> distinct;
  for (float v : y) {
    CHECK(std::isfinite(v));
    distinct.insert(v);
  }
  CHECK(distinct.size() > 1);
  CHECK(ex.loss() == 0.0f);  // no loss tensor in an inference graph
}
