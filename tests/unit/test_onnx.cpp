// ONNX import (models/onnx): the wire decoder, a hand-written model that must lower op for op
// like the same layers built directly, the committed torch-exported fixtures against the
// parameter counts torch printed (tests/data/onnx/*.json), and every bad-input error naming
// the file and the node.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <cstring>
#include <map>
#include <random>

#include "common/error.hpp"
#include "models/onnx/onnx_import.hpp"
#include "models/onnx/onnx_model.hpp"
#include "models/onnx/proto_wire.hpp"
#include "models/work.hpp"
#include "models/zoo.hpp"
#include "onnx_writer.hpp"
#include "xpusim_test_paths.hpp"

using namespace xpusim;
namespace W = xpusim::test_onnx;
namespace fs = std::filesystem;

namespace {

std::string fixture(const std::string& name) { return std::string(XPUSIM_TEST_DATA_DIR) + "/onnx/" + name; }

std::string write_temp(const std::string& name, const std::string& bytes) {
  fs::path dir = fs::temp_directory_path() / ("xpusim_onnx_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path p = dir / name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p.string();
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

GraphTotals totals_of(const ModelSpec& s, int64_t batch, bool training = false) {
  GraphOptions o;
  o.batch = batch;
  o.training = training;
  return graph_totals(build_graph(s, o));
}

int64_t sidecar_params(const std::string& name) {
  return nlohmann::json::parse(read_bytes(fixture(name + ".json"))).at("trainable_params").get<int64_t>();
}

// The error a model file gives, or "" when it loads and builds.
std::string error_of(const std::string& path, const OnnxImportOptions& o = {}) {
  try {
    totals_of(find_model(path, o), 2, true);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

// conv(3->8, 3x3, pad 1) -> BN -> ReLU -> maxpool 2 -> GAP -> Flatten -> Gemm(8->10)
W::GraphSpec small_cnn() {
  W::GraphSpec g;
  g.inputs = {W::value_info("x", 1, {1, 3, 8, 8}, {"N"})};
  g.outputs = {W::value_info("y", 1, {1, 10})};
  g.initializers = {W::tensor("w", {8, 3, 3, 3}), W::tensor("g", {8}), W::tensor("b", {8}), W::tensor("m", {8}),
                    W::tensor("v", {8}), W::tensor("fw", {10, 8}), W::tensor("fb", {10})};
  g.nodes = {W::node("Conv", {"x", "w"}, {"c"}, "conv",
                     {W::ints_attr("kernel_shape", {3, 3}), W::ints_attr("pads", {1, 1, 1, 1})}),
             W::node("BatchNormalization", {"c", "g", "b", "m", "v"}, {"n"}, "bn"),
             W::node("Relu", {"n"}, {"r"}, "relu"),
             W::node("MaxPool", {"r"}, {"p"}, "pool",
                     {W::ints_attr("kernel_shape", {2, 2}), W::ints_attr("strides", {2, 2})}),
             W::node("GlobalAveragePool", {"p"}, {"gp"}, "gap"), W::node("Flatten", {"gp"}, {"f"}, "flatten"),
             W::node("Gemm", {"f", "fw", "fb"}, {"y"}, "fc", {W::int_attr("transB", 1)})};
  return g;
}

}  // namespace

TEST_CASE("wire reader: varints and packed fields and bounds", "[onnx]") {
  std::string b;
  W::put_int(b, 1, 300);
  onnx::WireReader r(b);
  onnx::Field f = r.next();
  CHECK(f.number == 1);
  CHECK(onnx::as_int64(f) == 300);
  CHECK(r.done());

  std::string packed;
  for (int64_t v : {1, 128, -1}) W::put_varint(packed, static_cast<uint64_t>(v));
  std::string msg;
  W::put_bytes(msg, 7, packed);
  onnx::WireReader pr(msg);
  std::vector<int64_t> out;
  onnx::append_int64s(pr.next(), out);
  CHECK(out == std::vector<int64_t>{1, 128, -1});

  std::string cut = msg.substr(0, msg.size() - 1);  // the length says one byte more than there is
  onnx::WireReader cr(cut);
  CHECK_THROWS_AS(cr.next(), onnx::WireError);
  std::string endless(11, static_cast<char>(0xff));
  onnx::WireReader er(endless);
  CHECK_THROWS_AS(er.next(), onnx::WireError);
}

TEST_CASE("a hand-written ONNX CNN lowers op for op like the same layers built directly", "[onnx]") {
  std::string path = write_temp("small_cnn.onnx", W::model(small_cnn()));
  ModelSpec s = find_model(path);
  CHECK(s.family == "onnx");
  CHECK(s.name == "small_cnn.onnx");
  CHECK(s.input == std::vector<int64_t>{3, 8, 8});
  CHECK(s.classes == 10);

  OpGraph direct;
  ModelBuilder b(direct, 4, Precision::fp32);
  int x = b.image_input(3, 8, 8);
  int labels = b.labels();
  x = b.conv(x, 8, 3, 1, 1, false, "conv");
  x = b.relu(b.batch_norm(x, "bn"), "relu");
  x = b.global_avg_pool(b.max_pool(x, 2, 2, 0, "pool"), "gap");
  b.softmax_cross_entropy(b.dense(x, 10, true, "fc"), labels, "loss");
  count_all_work(direct);
  GraphTotals want = graph_totals(direct);

  GraphTotals got = totals_of(s, 4);
  CHECK(got.params == 8 * 3 * 9 + 2 * 8 + 8 * 10 + 10);
  CHECK(got.params == want.params);
  CHECK(got.flops_forward == want.flops_forward);
  CHECK(got.num_ops == want.num_ops);
  // Dim 0 is the batch of the build: forward work scales with it.
  CHECK(totals_of(s, 8).flops_forward == Approx(2 * got.flops_forward));
}

TEST_CASE("torch-exported fixtures import with torch's parameter counts", "[onnx]") {
  ModelSpec cnn = find_model(fixture("tiny_cnn.onnx"));
  CHECK(cnn.task == ModelTask::image);
  CHECK(cnn.input == std::vector<int64_t>{3, 16, 16});
  CHECK(totals_of(cnn, 2).params == sidecar_params("tiny_cnn"));
  // A training step: backward and update work exist as for a zoo model.
  GraphTotals t = totals_of(cnn, 2, true);
  CHECK(t.flops_backward > t.flops_forward);
  CHECK(t.flops_update > 0);
}

TEST_CASE("bad ONNX input: one error naming the file (and the node)", "[onnx]") {
  SECTION("unsupported operator") {
    W::GraphSpec g = small_cnn();
    g.nodes[2] = W::node("Celu", {"n"}, {"r"}, "weird_act");
    std::string path = write_temp("unsupported.onnx", W::model(g));
    std::string e = error_of(path);
    CHECK_THAT(e, Catch::Contains(path) && Catch::Contains("node 'weird_act' (Celu)") &&
                      Catch::Contains("not supported"));
  }
  SECTION("opset out of range") {
    std::string path = write_temp("old.onnx", W::model(small_cnn(), 9));
    CHECK_THAT(error_of(path), Catch::Contains(path) && Catch::Contains("opset 9 is not supported (supported: 13 to 18"));
  }
  SECTION("cycle") {
    W::GraphSpec g = small_cnn();
    g.nodes[2] = W::node("Add", {"n", "y2"}, {"r"}, "loop_a");
    g.nodes.push_back(W::node("Relu", {"r"}, {"y2"}, "loop_b"));
    std::string path = write_temp("cycle.onnx", W::model(g));
    CHECK_THAT(error_of(path), Catch::Contains(path) && Catch::Contains("cycle") && Catch::Contains("node 'loop_"));
  }
  SECTION("missing initializer") {
    W::GraphSpec g = small_cnn();
    g.initializers.erase(g.initializers.begin());  // the conv weights
    std::string path = write_temp("missing.onnx", W::model(g));
    CHECK_THAT(error_of(path), Catch::Contains("node 'conv' (Conv): input 'w' is neither a graph input"));
  }
  SECTION("no inputs") {
    W::GraphSpec g;
    g.initializers = {W::tensor("a", {2, 2})};
    g.nodes = {W::node("Relu", {"a"}, {"y"}, "r")};
    g.outputs = {W::value_info("y", 1, {2, 2})};
    std::string path = write_temp("noinput.onnx", W::model(g));
    CHECK_THAT(error_of(path), Catch::Contains(path) && Catch::Contains("has no inputs"));
  }
  SECTION("dynamic dimension without an override, and with one") {
    W::GraphSpec g = small_cnn();
    g.inputs = {W::value_info("x", 1, {1, 3, 8, 8}, {"N", "", "H", ""})};
    std::string path = write_temp("dynamic.onnx", W::model(g));
    CHECK_THAT(error_of(path), Catch::Contains("input_shape: " + path) && Catch::Contains("input 'x' dimension 2 is dynamic ('H')"));
    OnnxImportOptions o;
    parse_input_shape("x=1x3x8x8", o);
    CHECK(error_of(path, o).empty());
    OnnxImportOptions unknown;
    parse_input_shape("z=1x3", unknown);
    CHECK_THAT(error_of(path, unknown), Catch::Contains("'z' is not an input"));
    CHECK_THROWS_AS(parse_input_shape("x=1x0x8", o), FieldError);
    CHECK_THROWS_AS(parse_input_shape("x", o), FieldError);
  }
  SECTION("unsupported broadcast") {
    // [N, C, 1, 1] onto [N, C, H, W] is supported (an SE gate), and so is a lower rank aligned
    // right as numpy does (test_onnx_ops.cpp); [N, C] onto [N, C, H, W] aligns C with H and N
    // with W, which do not broadcast.
    W::GraphSpec g = small_cnn();
    g.nodes[2] = W::node("Add", {"n", "gf0"}, {"r"}, "bcast_add");
    g.nodes.insert(g.nodes.begin() + 2, W::node("Flatten", {"gp0"}, {"gf0"}, "flat0"));
    g.nodes.insert(g.nodes.begin() + 2, W::node("GlobalAveragePool", {"n"}, {"gp0"}, "gap0"));
    std::string path = write_temp("bcast.onnx", W::model(g));
    CHECK_THAT(error_of(path), Catch::Contains("node 'bcast_add' (Add): shapes [2,8,8,8] and [2,8] do not broadcast"));
  }
  SECTION("truncated file") {
    std::string bytes = read_bytes(fixture("tiny_cnn.onnx"));
    std::string path = write_temp("truncated.onnx", bytes.substr(0, bytes.size() / 2));
    CHECK_THAT(error_of(path), Catch::Contains(path + ": not a valid ONNX model"));
  }
  SECTION("random bytes never crash") {
    std::mt19937 rng(7);
    for (int i = 0; i < 200; ++i) {
      std::string bytes(1 + rng() % 300, '\0');
      for (auto& c : bytes) c = static_cast<char>(rng());
      std::string path = write_temp("random.onnx", bytes);
      CHECK_THAT(error_of(path), Catch::Contains(path) && !Catch::Contains("do not fit its input"));
    }
  }
  SECTION("mutated fixtures load or fail cleanly") {
    // Byte flips deep inside a valid file reach the graph checks and the lowering, not only
    // the decoder: each must end in a result or a UserError (an InternalError fails here).
    std::string good = read_bytes(fixture("tiny_cnn.onnx"));
    std::mt19937 rng(11);
    int loaded = 0;
    for (int i = 0; i < 300; ++i) {
      std::string bytes = good;
      for (int k = 0; k < 1 + i % 4; ++k) bytes[rng() % bytes.size()] = static_cast<char>(rng());
      std::string path = write_temp("mutated.onnx", bytes);
      std::string e = error_of(path);
      if (e.empty()) ++loaded;
      else CHECK_THAT(e, Catch::Contains(path) && !Catch::Contains("do not fit its input"));
    }
    CHECK(loaded > 0);  // most flips land in weight bytes, which are never read
  }
  SECTION("input_shape on a zoo model") {
    OnnxImportOptions o;
    parse_input_shape("x=1x3", o);
    CHECK_THROWS_AS(find_model("resnet50", o), FieldError);
  }
}

namespace {
// Forward ops of an imported model at batch 2, by name.
std::map<std::string, const OpNode*> forward_ops(const OpGraph& g) {
  std::map<std::string, const OpNode*> out;
  for (int i = 0; i < g.num_ops(); ++i)
    if (g.op(i).phase == Phase::forward) out[g.op(i).name] = &g.op(i);
  return out;
}
OpGraph graph_of(const std::string& path, int64_t batch) {
  GraphOptions o;
  o.batch = batch;
  o.training = true;
  return build_graph(find_model(path), o);
}
}  // namespace

TEST_CASE("torch-exported Transformers: parameters and GELU and LayerNorm and attention", "[onnx]") {
  for (std::string name : {"bert_tiny", "gpt_tiny"}) {
    INFO(name);
    ModelSpec s = find_model(fixture(name + ".onnx"));
    CHECK(s.task == ModelTask::sequence);
    CHECK(s.input == std::vector<int64_t>{16});
    CHECK(s.classes == 256);
    CHECK(totals_of(s, 2).params == sidecar_params(name));
    OpGraph g = graph_of(fixture(name + ".onnx"), 3);
    auto ops = forward_ops(g);
    // F.gelu's Erf chain is one GELU activation named after its Div; nothing of it is left.
    REQUIRE(ops.count("/blocks.0/Div_1"));
    CHECK(ops.at("/blocks.0/Div_1")->kind == OpKind::Activation);
    CHECK(ops.at("/blocks.0/Div_1")->attrs.act == ActivationFn::gelu);
    CHECK(!ops.count("/blocks.0/Erf"));
    // The attention core (head split, QK^T, 1/sqrt(d), [causal mask], softmax, PV, head
    // merge) is one attention op on [N, T, D], named after its QK^T MatMul, as the zoo's.
    REQUIRE(ops.count("/blocks.0/MatMul"));
    const OpNode& att = *ops.at("/blocks.0/MatMul");
    CHECK(att.kind == OpKind::Attention);
    CHECK(att.attrs.heads == 4);
    CHECK(att.attrs.causal == (name == "gpt_tiny"));
    CHECK(g.tensor(att.outputs[0]).desc.shape == Shape{3, 16, 64});
    for (const char* gone : {"/blocks.0/MatMul_1", "/blocks.0/Softmax", "/blocks.0/Transpose", "/blocks.0/Div"})
      CHECK(!ops.count(gone));
    // Position ids are a host-fed input of their own; the loss is per token.
    CHECK(ops.count("/pos/Gather"));
    CHECK(g.tensor(ops.at("loss")->inputs[0]).desc.shape == Shape{3, 16, 256});
  }
}

TEST_CASE("the imported GPT costs like the same GPT built by the zoo's transformer family", "[onnx]") {
  // gpt_tiny as a zoo YAML: pre-LN, causal, final norm, LM head. The zoo ties the head to the
  // token table (no bias); the export has its own head with a bias: exactly that many
  // parameters apart, and the same forward work up to the head's bias add.
  std::string yaml = write_temp("gpt_tiny_zoo.yaml",
                                "name: gpt_tiny_zoo\nfamily: transformer\ndataset: openwebtext\ntask: sequence\n"
                                "input: [16]\nclasses: 256\nparams: {vocab: 256, hidden: 64, layers: 2, heads: 4, "
                                "ffn: 128, max_positions: 16, type_vocab: 0, causal: true, pre_norm: true, "
                                "final_norm: true, pooler: false, head: lm, dropout: 0, layer_norm_eps: 1.0e-5}\n");
  GraphTotals zoo = totals_of(load_model_spec(yaml), 4, true);
  GraphTotals imported = totals_of(find_model(fixture("gpt_tiny.onnx")), 4, true);
  CHECK(imported.params - zoo.params == 256 * 64 + 256);
  CHECK(imported.flops_forward == Approx(zoo.flops_forward).epsilon(0.005));
  CHECK(imported.flops_train_step == Approx(zoo.flops_train_step).epsilon(0.01));
}

TEST_CASE("attention outside the fused pattern lowers op by op", "[onnx]") {
  // attn_unfused scales q before QK^T: transposes, batched products, a scale, and the causal
  // mask (masked_fill -> Where) folded into the softmax that follows it.
  const std::string path = fixture("attn_unfused.onnx");
  CHECK(totals_of(find_model(path), 2).params == sidecar_params("attn_unfused"));
  OpGraph g = graph_of(path, 2);
  auto ops = forward_ops(g);
  auto kind = [&](const char* n) { return ops.count(n) ? op_kind_name(ops.at(n)->kind) : std::string("absent"); };
  CHECK(kind("/blocks.0/Transpose") == std::string("transpose"));
  CHECK(kind("/blocks.0/Mul") == std::string("scale"));
  CHECK(kind("/blocks.0/MatMul") == std::string("matmul"));
  CHECK(g.tensor(ops.at("/blocks.0/MatMul")->outputs[0]).desc.shape == Shape{2, 4, 8, 8});
  CHECK(kind("/blocks.0/Softmax") == std::string("softmax"));
  CHECK(kind("/blocks.0/Where") == std::string("absent"));
  CHECK(kind("/blocks.0/MatMul_1") == std::string("matmul"));
  CHECK(kind("/blocks.0/Reshape_3") == std::string("reshape"));
  // The same work at twice the batch: the forward FLOPs double.
  GraphTotals t2 = totals_of(find_model(path), 2), t4 = totals_of(find_model(path), 4);
  CHECK(t4.flops_forward == Approx(2 * t2.flops_forward));
}

TEST_CASE("an attention core with a mask that is not causal is matched then lowered op by op", "[onnx]") {
  // attn_band has the fused pattern's structure and scale, but each position also sees the
  // next one: attention() cannot express that mask, so the chain is lowered node by node.
  const std::string path = fixture("attn_band.onnx");
  CHECK(totals_of(find_model(path), 2).params == sidecar_params("attn_band"));
  OpGraph graph = graph_of(path, 2);  // alive while ops points into it
  auto ops = forward_ops(graph);
  auto kind = [&](const char* n) { return ops.count(n) ? op_kind_name(ops.at(n)->kind) : std::string("absent"); };
  CHECK(kind("/blocks.0/MatMul") == std::string("matmul"));
  CHECK(kind("/blocks.0/Div") == std::string("scale"));
  CHECK(kind("/blocks.0/Softmax") == std::string("softmax"));
  CHECK(kind("/blocks.0/Where") == std::string("absent"));
  CHECK(kind("/blocks.0/MatMul_1") == std::string("matmul"));
  CHECK(kind("/blocks.0/Transpose_3") == std::string("transpose"));
  CHECK(kind("/blocks.0/Reshape_3") == std::string("reshape"));
}

TEST_CASE("mutated Transformer exports load or fail cleanly", "[onnx]") {
  // Nodes come first in a serialized graph: flips in the first bytes hit op types, names,
  // attributes and the wiring the patterns read.
  std::string good = read_bytes(fixture("attn_unfused.onnx"));
  std::mt19937 rng(5);
  for (int i = 0; i < 300; ++i) {
    std::string bytes = good;
    for (int k = 0; k < 1 + i % 3; ++k) bytes[rng() % 12000] = static_cast<char>(rng());
    std::string path = write_temp("mutated_tf.onnx", bytes);
    std::string e = error_of(path);
    if (!e.empty()) CHECK_THAT(e, Catch::Contains(path) && !Catch::Contains("do not fit its input"));
  }
}

TEST_CASE("a decomposed LayerNorm is one layer norm with its scale and bias", "[onnx]") {
  W::GraphSpec g;
  g.inputs = {W::value_info("x", 1, {1, 4, 8})};
  g.outputs = {W::value_info("y", 1, {1, 4, 3})};
  g.initializers = {W::tensor("gamma", {8}), W::tensor("beta", {8}), W::tensor("w", {8, 3})};
  auto scalar = [](const std::string& out, float v) {
    std::string t;
    W::put_int(t, 2, 1);
    std::string raw(4, '\0');
    std::memcpy(raw.data(), &v, 4);
    W::put_bytes(t, 9, raw);
    return W::node("Constant", {}, {out}, out + "_node", {W::tensor_attr("value", t)});
  };
  g.nodes = {W::node("ReduceMean", {"x"}, {"m"}, "ln_mean", {W::ints_attr("axes", {-1})}),
             W::node("Sub", {"x", "m"}, {"d"}, "ln_sub"),
             scalar("two", 2.0f),
             W::node("Pow", {"d", "two"}, {"p"}, "ln_pow"),
             W::node("ReduceMean", {"p"}, {"v"}, "ln_var", {W::ints_attr("axes", {-1})}),
             scalar("eps", 1e-5f),
             W::node("Add", {"v", "eps"}, {"ve"}, "ln_add"),
             W::node("Sqrt", {"ve"}, {"s"}, "ln_sqrt"),
             W::node("Div", {"d", "s"}, {"n"}, "ln_div"),
             W::node("Mul", {"n", "gamma"}, {"g"}, "ln_scale"),
             W::node("Add", {"g", "beta"}, {"z"}, "ln_bias"),
             W::node("MatMul", {"z", "w"}, {"y"}, "proj")};
  std::string path = write_temp("decomposed_ln.onnx", W::model(g, 17));
  ModelSpec s = find_model(path);
  CHECK(totals_of(s, 2).params == 8 + 8 + 8 * 3);
  OpGraph graph = graph_of(path, 2);  // alive while ops points into it
  auto ops = forward_ops(graph);
  CHECK(ops.count("ln_mean"));
  CHECK(!ops.count("ln_div"));
  CHECK(ops.count("proj"));

  // The same chain without its scale is not a LayerNorm: one error at the ReduceMean.
  g.nodes.pop_back();
  g.nodes.pop_back();
  g.nodes.pop_back();
  g.nodes.push_back(W::node("MatMul", {"n", "w"}, {"y"}, "proj"));
  g.initializers = {W::tensor("w", {8, 3})};
  std::string bad = write_temp("decomposed_ln_bad.onnx", W::model(g, 17));
  CHECK_THAT(error_of(bad), Catch::Contains("node 'ln_mean' (ReduceMean): ReduceMean is supported only"));
}
