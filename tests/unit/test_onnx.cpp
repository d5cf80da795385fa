// ONNX import (models/onnx): the wire decoder, a hand-written model that must lower op for op
// like the same layers built directly, the committed torch-exported fixtures against the
// parameter counts torch printed (tests/data/onnx/*.json), and every bad-input error naming
// the file and the node.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <random>

#include "common/error.hpp"
#include "models/onnx/onnx_import.hpp"
#include "models/onnx/onnx_model.hpp"
#include "models/onnx/proto_wire.hpp"
#include "models/work.hpp"
#include "models/zoo.hpp"
#include "onnx_writer.hpp"

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

TEST_CASE("wire reader: varints, packed fields and bounds", "[onnx]") {
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
  CHECK(s.name == "small_cnn");
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
    W::GraphSpec g = small_cnn();
    g.nodes[2] = W::node("Add", {"n", "gp0"}, {"r"}, "bcast_add");
    g.nodes.insert(g.nodes.begin() + 2, W::node("GlobalAveragePool", {"n"}, {"gp0"}, "gap0"));
    std::string path = write_temp("bcast.onnx", W::model(g));
    CHECK_THAT(error_of(path), Catch::Contains("node 'bcast_add' (Add): broadcast of"));
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
      CHECK_THAT(error_of(path), Catch::Contains(path));
    }
  }
  SECTION("input_shape on a zoo model") {
    OnnxImportOptions o;
    parse_input_shape("x=1x3", o);
    CHECK_THROWS_AS(find_model("resnet50", o), FieldError);
  }
}
