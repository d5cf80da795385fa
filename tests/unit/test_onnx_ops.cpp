// ONNX operator coverage (issue 35): hand-written graphs for the operators MobileNet,
// EfficientNet, ViT, ConvNeXt and torch's nn.MultiheadAttention exports use, with parameter
// counts and shapes derived by hand; the eval-mode note; and the operator table against
// docs/onnx.md.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "common/error.hpp"
#include "models/onnx/onnx_fold.hpp"
#include "models/onnx/onnx_lower.hpp"
#include "models/work.hpp"
#include "models/zoo.hpp"
#include "onnx_writer.hpp"
#include "xpusim_test_paths.hpp"

using namespace xpusim;
namespace W = xpusim::test_onnx;
namespace fs = std::filesystem;

namespace {

std::string write_model(const std::string& name, const W::GraphSpec& g) {
  fs::path dir = fs::temp_directory_path() / ("xpusim_onnx_ops_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path p = dir / name;
  std::ofstream(p, std::ios::binary) << W::model(g);
  return p.string();
}

OpGraph forward(const ModelSpec& s, int64_t batch) {
  GraphOptions o;
  o.batch = batch;
  return build_graph(s, o);
}

const OpNode* op_named(const OpGraph& g, const std::string& name) {
  for (int i = 0; i < g.num_ops(); ++i)
    if (g.op(i).name == name && g.op(i).phase == Phase::forward) return &g.op(i);
  return nullptr;
}

std::string error_of(const W::GraphSpec& g, const std::string& name) {
  try {
    forward(find_model(write_model(name, g)), 2);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

// A scalar float constant (the writer's float tensors hold zeros; Clip needs only scalars).
std::string scalar(const std::string& name) { return W::tensor(name, {}); }

// conv 3->8 -> Clip (ReLU6) -> depthwise 3x3 -> HardSwish -> squeeze-excitation (GAP, 1x1
// 8->4, Relu, 1x1 4->8, HardSigmoid, Mul with broadcast) -> MaxPool 3/2 ceil_mode -> GAP ->
// Flatten -> Gemm 8->10: MobileNetV3's block.
W::GraphSpec mobile_block() {
  W::GraphSpec g;
  g.inputs = {W::value_info("x", 1, {1, 3, 8, 8}, {"N"})};
  g.outputs = {W::value_info("y", 1, {1, 10})};
  g.initializers = {W::tensor("w1", {8, 3, 3, 3}), W::tensor("dw", {8, 1, 3, 3}), W::tensor("s1", {4, 8, 1, 1}),
                    W::tensor("s1b", {4}), W::tensor("s2", {8, 4, 1, 1}), W::tensor("s2b", {8}),
                    W::tensor("fw", {10, 8}), W::tensor("fb", {10}), scalar("lo"), scalar("hi")};
  auto pad1 = W::ints_attr("pads", {1, 1, 1, 1});
  g.nodes = {W::node("Conv", {"x", "w1"}, {"c1"}, "conv1", {pad1}),
             W::node("Clip", {"c1", "lo", "hi"}, {"r6"}, "relu6"),
             W::node("Conv", {"r6", "dw"}, {"d"}, "depthwise", {pad1, W::int_attr("group", 8)}),
             W::node("HardSwish", {"d"}, {"hs"}, "hswish"),
             W::node("GlobalAveragePool", {"hs"}, {"sq"}, "se.pool"),
             W::node("Conv", {"sq", "s1", "s1b"}, {"e1"}, "se.fc1"),
             W::node("Relu", {"e1"}, {"e1r"}, "se.relu"),
             W::node("Conv", {"e1r", "s2", "s2b"}, {"e2"}, "se.fc2"),
             W::node("HardSigmoid", {"e2"}, {"gate"}, "se.gate"),
             W::node("Mul", {"hs", "gate"}, {"scaled"}, "se.scale"),
             W::node("MaxPool", {"scaled"}, {"p"}, "pool",
                     {W::ints_attr("kernel_shape", {3, 3}), W::ints_attr("strides", {2, 2}), W::int_attr("ceil_mode", 1)}),
             W::node("GlobalAveragePool", {"p"}, {"gp"}, "gap"),
             W::node("Flatten", {"gp"}, {"f"}, "flatten"),
             W::node("Gemm", {"f", "fw", "fb"}, {"y"}, "fc", {W::int_attr("transB", 1)})};
  return g;
}

}  // namespace

TEST_CASE("a MobileNetV3 block: ReLU6, depthwise conv, HardSwish, a broadcast SE gate, ceil-mode pooling", "[onnx]") {
  ModelSpec s = find_model(write_model("mobile_block.onnx", mobile_block()));
  OpGraph g = forward(s, 2);
  // conv 8*3*9, depthwise 8*9, SE 8*4+4 and 4*8+8, fc 8*10+10
  CHECK(graph_totals(g).params == 216 + 72 + 36 + 40 + 90);
  const OpNode* pool = op_named(g, "pool");
  REQUIRE(pool);
  // 8 + 0 - 3 = 5 over stride 2: floor gives 3 windows, ceil 4 (the 4th starts at 6 < 8)
  CHECK(g.tensor(pool->outputs[0]).desc.shape == Shape{2, 8, 4, 4});
  const OpNode* mul = op_named(g, "se.scale");
  REQUIRE(mul);
  CHECK(mul->kind == OpKind::Mul);
  CHECK(g.tensor(mul->inputs[1]).desc.shape == Shape{2, 8, 1, 1});
  CHECK(mul->work.flops == 2.0 * 8 * 8 * 8);  // over the larger operand
  const OpNode* dw = op_named(g, "depthwise");
  REQUIRE(dw);
  CHECK(dw->attrs.groups == 8);
  CHECK(dw->work.flops == 2.0 * 2 * 8 * 8 * 8 * 9);  // 2 x N x C x H x W x 3x3, one input channel per group
  REQUIRE(op_named(g, "relu6"));
  CHECK(op_named(g, "relu6")->kind == OpKind::Activation);
  // The training step builds (the broadcast gate's gradient is a reduction of the same size).
  GraphOptions o;
  o.batch = 2;
  o.training = true;
  CHECK(graph_totals(build_graph(s, o)).flops_train_step > graph_totals(g).flops_forward);
}

TEST_CASE("weights rearranged before use are parameters of the new shape, counted once", "[onnx]") {
  // torch's nn.MultiheadAttention export: MatMul(x, Transpose(in_proj_weight)) + bias.
  W::GraphSpec g;
  g.inputs = {W::value_info("x", 1, {1, 4, 6}, {"N"})};
  g.outputs = {W::value_info("y", 1, {1, 4, 5})};
  g.initializers = {W::tensor("w", {5, 6}), W::tensor("b", {5})};
  g.nodes = {W::node("Transpose", {"w"}, {"wt"}, "w.T", {W::ints_attr("perm", {1, 0})}),
             W::node("MatMul", {"x", "wt"}, {"h"}, "proj"), W::node("Add", {"h", "b"}, {"y"}, "proj.bias")};
  ModelSpec s = find_model(write_model("transposed.onnx", g));
  OpGraph fg = forward(s, 3);
  CHECK(graph_totals(fg).params == 5 * 6 + 5);
  const OpNode* proj = op_named(fg, "proj");
  REQUIRE(proj);
  CHECK(proj->work.flops == 2.0 * 3 * 4 * 6 * 5 + 3 * 4 * 5);

  // The same transposed weight used twice is tied: refused, it would count twice.
  W::GraphSpec tied = g;
  tied.outputs = {W::value_info("y2", 1, {1, 4, 5})};
  tied.nodes.push_back(W::node("MatMul", {"x", "wt"}, {"h2"}, "proj2"));
  tied.nodes.push_back(W::node("Add", {"y", "h2"}, {"y2"}, "sum"));
  CHECK_THAT(error_of(tied, "tied.onnx"), Catch::Contains("node 'proj2' (MatMul)") && Catch::Contains("tied"));
}

TEST_CASE("a parameter broadcast over the batch (position embedding) is counted once", "[onnx]") {
  W::GraphSpec g;
  g.inputs = {W::value_info("x", 1, {1, 4, 6}, {"N"})};
  g.outputs = {W::value_info("y", 1, {1, 4, 5})};
  g.initializers = {W::tensor("pos", {1, 4, 6}), W::tensor("w", {6, 5})};
  g.nodes = {W::node("Add", {"x", "pos"}, {"h"}, "add_pos"), W::node("MatMul", {"h", "w"}, {"y"}, "proj")};
  ModelSpec s = find_model(write_model("pos.onnx", g));
  OpGraph fg = forward(s, 2);
  CHECK(graph_totals(fg).params == 4 * 6 + 6 * 5);
  const OpNode* add = op_named(fg, "add_pos");
  REQUIRE(add);
  CHECK(add->kind == OpKind::Add);
  // The parameter is one embedding row per sample (vocab 1, dim 4*6), reshaped to [N, 4, 6].
  const OpNode* param = op_named(fg, "add_pos.param");
  REQUIRE(param);
  CHECK(param->kind == OpKind::Embedding);
  CHECK(fg.tensor(param->outputs[0]).desc.shape == Shape{2, 1, 24});
}

TEST_CASE("ScatterND and stepped Slice fold as ONNX defines them (Swin's shifted-window mask)", "[onnx]") {
  using onnx::Const;
  using onnx::DataType;
  onnx::Node n;
  n.op_type = "ScatterND";
  Const data{{3, 4}, std::vector<double>(12, 0.0), DataType::float32};
  // Whole rows: indices [2, 1] pick rows 2 and 0, updates [2, 4].
  Const rows{{2, 1}, {2, 0}, DataType::int64};
  Const rv{{2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}, DataType::float32};
  Const r = onnx::fold_node(n, {data, rows, rv}, 17);
  CHECK(r.shape == Shape{3, 4});
  CHECK(r.v == std::vector<double>{5, 6, 7, 8, 0, 0, 0, 0, 1, 2, 3, 4});
  // Single elements: indices [2, 2] = (1, 3) and (-1, 0), reduction add onto ones.
  Const ones{{3, 4}, std::vector<double>(12, 1.0), DataType::float32};
  Const elems{{2, 2}, {1, 3, -1, 0}, DataType::int64};
  Const ev{{2}, {10, 20}, DataType::float32};
  onnx::Attribute add;
  add.name = "reduction";
  add.type = onnx::Attribute::Type::s;
  add.s = "add";
  n.attributes = {add};
  r = onnx::fold_node(n, {ones, elems, ev}, 17);
  CHECK(r.v == std::vector<double>{1, 1, 1, 1, 1, 1, 1, 11, 21, 1, 1, 1});
  // Updates of the wrong shape, an index out of range: errors, not guesses.
  n.attributes.clear();
  CHECK_THROWS_AS(onnx::fold_node(n, {data, rows, ev}, 17), std::invalid_argument);
  Const far{{1, 1}, {3}, DataType::int64};
  CHECK_THROWS_AS(onnx::fold_node(n, {data, far, Const{{1, 4}, {0, 0, 0, 0}, DataType::float32}}, 17),
                  std::invalid_argument);

  // Slice of 0..9 with steps: [1:8:3] = 1 4 7; [8:-11:-3] (end past the front) = 8 5 2;
  // [-1:-4:-1] = 9 8 7; a step of 0 is an error.
  onnx::Node sl;
  sl.op_type = "Slice";
  Const x{{10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, DataType::int64};
  auto slice = [&](int64_t b, int64_t e, int64_t st) {
    auto one = [](int64_t v) { return Const{{1}, {static_cast<double>(v)}, DataType::int64}; };
    return onnx::fold_node(sl, {x, one(b), one(e), one(0), one(st)}, 17).v;
  };
  CHECK(slice(1, 8, 3) == std::vector<double>{1, 4, 7});
  CHECK(slice(8, -11, -3) == std::vector<double>{8, 5, 2});
  CHECK(slice(-1, -4, -1) == std::vector<double>{9, 8, 7});
  CHECK_THROWS_AS(slice(0, 5, 0), std::invalid_argument);
}

TEST_CASE("a relative position bias (table rows by constant index) counts the table once", "[onnx]") {
  // Swin / MaxViT: bias = Unsqueeze(Transpose(Reshape(Gather(table [5, 2], idx [9]), [3, 3, 2]),
  // 2 0 1), 0) = [1, 2 heads, 3, 3], added to scores. Swin adds it to [N * windows, 2, 3, 3]
  // (windows folded into dim 0), MaxViT to [N, windows, 2, 3, 3] (one rank more).
  auto graph = [](bool windows_in_batch) {
    W::GraphSpec g;
    g.inputs = {W::value_info("x", 1, {1, 4, 9}, {"N"})};  // scores [N, windows 2 x heads 2, 3 x 3]
    g.outputs = {W::value_info("y", 1, {1, 5})};
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 3; ++j) idx.push_back(i - j + 2);
    g.initializers = {W::tensor("table", {5, 2}), W::tensor("idx", {9}, 7, idx),
                      W::tensor("rs", {3}, 7, {3, 3, 2}), W::tensor("axes", {1}, 7, {0}),
                      W::tensor("split", {5}, 7, {-1, 2, 2, 3, 3}), W::tensor("win", {4}, 7, {-1, 2, 3, 3}),
                      W::tensor("flat", {2}, 7, {-1, 36}),
                      W::tensor("w", {36, 5})};
    g.nodes = {W::node("Reshape", {"x", "split"}, {"x5"}, "scores"),
               W::node("Gather", {"table", "idx"}, {"rows"}, "bias.gather"),
               W::node("Reshape", {"rows", "rs"}, {"b3"}, "bias.view"),
               W::node("Transpose", {"b3"}, {"bt"}, "bias.permute", {W::ints_attr("perm", {2, 0, 1})}),
               W::node("Unsqueeze", {"bt", "axes"}, {"bias"}, "bias.unsqueeze")};
    if (windows_in_batch) {
      g.nodes.push_back(W::node("Reshape", {"x5", "win"}, {"s"}, "windows"));
      g.nodes.push_back(W::node("Add", {"s", "bias"}, {"h"}, "add_bias"));
    } else {
      g.nodes.push_back(W::node("Add", {"x5", "bias"}, {"h"}, "add_bias"));
    }
    g.nodes.push_back(W::node("Reshape", {"h", "flat"}, {"f"}, "flatten"));
    g.nodes.push_back(W::node("MatMul", {"f", "w"}, {"y"}, "head"));
    return g;
  };
  for (bool swin : {true, false}) {
    OpGraph fg = forward(find_model(write_model(swin ? "swin_bias.onnx" : "maxvit_bias.onnx", graph(swin))), 3);
    CHECK(graph_totals(fg).params == 5 * 2 + 36 * 5);  // the table once, not 9 x 2 per use
    const OpNode* lookup = op_named(fg, "add_bias.param");
    REQUIRE(lookup);
    CHECK(lookup->kind == OpKind::Embedding);
    // Per sample: the 9 picked rows of width 2, once per window folded into dim 0 (Swin: 2).
    CHECK(fg.tensor(lookup->outputs[0]).desc.shape == (swin ? Shape{3, 18, 2} : Shape{3, 9, 2}));
    const OpNode* add = op_named(fg, "add_bias");
    REQUIRE(add);
    CHECK(fg.tensor(add->outputs[0]).desc.shape == (swin ? Shape{6, 2, 3, 3} : Shape{3, 2, 2, 3, 3}));
  }
}

TEST_CASE("Einsum, Split, Slice, Pad and Resize lower with the shapes ONNX defines", "[onnx]") {
  W::GraphSpec g;
  g.inputs = {W::value_info("x", 1, {1, 8, 4, 4}, {"N"})};
  g.outputs = {W::value_info("y", 1, {1, 10})};
  g.initializers = {W::tensor("split", {2}, 7, {3, 5}), W::tensor("starts", {1}, 7, {1}),
                    W::tensor("ends", {1}, 7, {3}), W::tensor("axes", {1}, 7, {2}),
                    W::tensor("pads", {8}, 7, {0, 0, 1, 1, 0, 0, 1, 1}), W::tensor("sizes", {4}, 7, {1, 3, 8, 12}),
                    W::tensor("fw", {10, 3}), W::tensor("fb", {10})};
  g.nodes = {W::node("Split", {"x", "split"}, {"a", "b"}, "split", {W::int_attr("axis", 1)}),
             W::node("Slice", {"a", "starts", "ends", "axes"}, {"s"}, "slice"),
             W::node("Pad", {"s", "pads"}, {"pd"}, "pad"),
             W::node("Resize", {"pd", "", "", "sizes"}, {"rs"}, "resize"),
             W::node("Einsum", {"rs", "rs"}, {"e"}, "einsum", {}),
             W::node("GlobalAveragePool", {"e"}, {"gp"}, "gap"), W::node("Flatten", {"gp"}, {"f"}, "flatten"),
             W::node("Gemm", {"f", "fw", "fb"}, {"y"}, "fc", {W::int_attr("transB", 1)})};
  // The writer has no string attributes: an Einsum without an equation is refused by name.
  CHECK_THAT(error_of(g, "einsum.onnx"), Catch::Contains("node 'einsum' (Einsum)"));
  g.nodes[4] = W::node("Identity", {"rs"}, {"e"}, "id");
  ModelSpec s = find_model(write_model("moves.onnx", g));
  OpGraph fg = forward(s, 2);
  const OpNode* split = op_named(fg, "split");
  REQUIRE(split);
  CHECK(fg.tensor(split->outputs[0]).desc.shape == Shape{2, 3, 4, 4});
  const OpNode* slice = op_named(fg, "slice");
  REQUIRE(slice);
  CHECK(fg.tensor(slice->outputs[0]).desc.shape == Shape{2, 3, 2, 4});
  const OpNode* pad = op_named(fg, "pad");
  REQUIRE(pad);
  CHECK(fg.tensor(pad->outputs[0]).desc.shape == Shape{2, 3, 4, 6});
  // Data movement: no arithmetic, the traffic of both tensors.
  CHECK(pad->work.flops == 0);
  CHECK(pad->work.bytes_read == 2 * 3 * 2 * 4 * 4);
  CHECK(pad->work.bytes_written == 2 * 3 * 4 * 6 * 4);
  const OpNode* resize = op_named(fg, "resize");
  REQUIRE(resize);
  CHECK(fg.tensor(resize->outputs[0]).desc.shape == Shape{2, 3, 8, 12});  // dim 0 is the build's batch
  CHECK(graph_totals(fg).params == 3 * 10 + 10);
}

TEST_CASE("an export whose BatchNorms were folded into convolutions says so", "[onnx]") {
  W::GraphSpec g;
  g.inputs = {W::value_info("x", 1, {1, 3, 8, 8}, {"N"})};
  g.outputs = {W::value_info("y", 1, {1, 10})};
  g.initializers = {W::tensor("onnx::Conv_7", {8, 3, 3, 3}), W::tensor("onnx::Conv_8", {8}), W::tensor("fw", {10, 8}),
                    W::tensor("fb", {10})};
  g.nodes = {W::node("Conv", {"x", "onnx::Conv_7", "onnx::Conv_8"}, {"c"}, "conv"),
             W::node("Relu", {"c"}, {"r"}, "relu"), W::node("GlobalAveragePool", {"r"}, {"gp"}, "gap"),
             W::node("Flatten", {"gp"}, {"f"}, "flatten"),
             W::node("Gemm", {"f", "fw", "fb"}, {"y"}, "fc", {W::int_attr("transB", 1)})};
  ModelSpec folded = find_model(write_model("folded.onnx", g));
  REQUIRE(folded.notes.size() == 1);
  CHECK_THAT(folded.notes[0], Catch::Contains("eval-mode export") && Catch::Contains("1 convolutions"));
  // torch's training-mode export (the committed fixture) keeps its BatchNorms: no note.
  CHECK(find_model(std::string(XPUSIM_TEST_DATA_DIR) + "/onnx/tiny_cnn.onnx").notes.empty());
  g.initializers[0] = W::tensor("conv.weight", {8, 3, 3, 3});
  g.initializers[1] = W::tensor("conv.bias", {8});
  g.nodes[0] = W::node("Conv", {"x", "conv.weight", "conv.bias"}, {"c"}, "conv");
  CHECK(find_model(write_model("own_bias.onnx", g)).notes.empty());
}

TEST_CASE("the operator table is the supported set, and docs/onnx.md lists every operator", "[onnx]") {
  std::vector<std::string> ops = onnx::supported_op_types();
  CHECK(std::is_sorted(ops.begin(), ops.end()));
  CHECK(std::adjacent_find(ops.begin(), ops.end()) == ops.end());
  for (const char* op : {"Clip", "HardSwish", "Einsum", "Resize", "Split", "Slice", "Expand", "LayerNormalization"})
    CHECK(onnx::is_supported_op(op));
  CHECK_FALSE(onnx::is_supported_op("NonMaxSuppression"));
  std::ifstream in(std::string(XPUSIM_TEST_DATA_DIR) + "/../../docs/onnx.md");
  REQUIRE(in);
  std::string doc((std::istreambuf_iterator<char>(in)), {});
  // The operator column of the "Supported operators" table: first cell of each row.
  std::set<std::string> documented;
  std::regex row(R"(\n\| ([A-Za-z, ]+) \|)");
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), row); it != std::sregex_iterator(); ++it) {
    std::string cell = (*it)[1];
    std::regex word(R"([A-Za-z]+)");
    for (auto w = std::sregex_iterator(cell.begin(), cell.end(), word); w != std::sregex_iterator(); ++w)
      documented.insert(w->str());
  }
  for (const auto& op : ops) {
    INFO(op);
    CHECK(documented.count(op));
  }
  for (const auto& d : documented)
    if (std::isupper(static_cast<unsigned char>(d[0])) && d != "Patterns") {
      INFO(d);
      CHECK(onnx::is_supported_op(d));
    }
}
