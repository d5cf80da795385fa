// Chakra execution-trace export (models/chakra_export.hpp): a tiny data-parallel training
// step is encoded and read back with the ONNX loader's independent protobuf wire reader
// (models/onnx/proto_wire.hpp), field numbers from et_def.proto; sizes derived by hand.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "common/error.hpp"
#include "models/builder.hpp"
#include "models/chakra_export.hpp"
#include "models/onnx/proto_wire.hpp"
#include "models/training.hpp"
#include "models/work.hpp"

using namespace xpusim;
using onnx::Field;
using onnx::WireReader;

namespace {

struct DecodedNode {
  uint64_t id = 0;
  std::string name;
  int type = 0;
  std::vector<uint64_t> data_deps;
  uint64_t duration_us = 0;
  bool has_duration = false;
  std::map<std::string, uint64_t> uints;  // uint64_val / int64_val / bool_val attributes
  std::map<std::string, std::string> strings;
  std::string input_shapes;
};

uint64_t read_varint(std::string_view s, size_t& pos) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    REQUIRE(pos < s.size());
    const auto b = static_cast<uint8_t>(s[pos++]);
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  FAIL("varint too long");
  return 0;
}

// The stream: varint length, message; the first is GlobalMetadata.
std::vector<std::string_view> split_stream(std::string_view s) {
  std::vector<std::string_view> msgs;
  size_t pos = 0;
  while (pos < s.size()) {
    const uint64_t n = read_varint(s, pos);
    REQUIRE(pos + n <= s.size());
    msgs.push_back(s.substr(pos, n));
    pos += n;
  }
  return msgs;
}

DecodedNode decode_node(std::string_view m) {
  DecodedNode n;
  WireReader r(m);
  while (!r.done()) {
    const Field f = r.next();
    switch (f.number) {
      case 1: n.id = f.varint; break;
      case 2: n.name = onnx::as_string(f); break;
      case 3: n.type = static_cast<int>(f.varint); break;
      case 5: {
        std::vector<int64_t> v;
        onnx::append_int64s(f, v);
        for (int64_t d : v) n.data_deps.push_back(static_cast<uint64_t>(d));
        break;
      }
      case 7: n.duration_us = f.varint; n.has_duration = true; break;
      case 8: {
        WireReader io(onnx::as_message(f));
        while (!io.done()) {
          const Field g = io.next();
          if (g.number == 2) n.input_shapes = onnx::as_string(g);
        }
        break;
      }
      case 10: {
        WireReader a(onnx::as_message(f));
        std::string name;
        uint64_t u = 0;
        std::string sv;
        int value_field = 0;
        while (!a.done()) {
          const Field g = a.next();
          if (g.number == 1) name = onnx::as_string(g);
          else if (g.number == 9 || g.number == 13 || g.number == 27) u = g.varint, value_field = static_cast<int>(g.number);
          else if (g.number == 29) sv = onnx::as_string(g), value_field = 29;
        }
        if (value_field == 29) n.strings[name] = sv;
        else n.uints[name] = u;
        // The types ASTRA-sim's feeder reads them as (chakra's own generator writes these).
        if (name == "comm_size" || name == "tensor_size") CHECK(value_field == 13);
        if (name == "comm_type" || name == "num_ops") CHECK(value_field == 9);
        if (name == "is_cpu_op") CHECK(value_field == 27);
        break;
      }
      default: break;
    }
  }
  return n;
}

// x[2,3,8,8] -> conv 4x3x3x3 (no bias) -> relu -> gap -> dense 4->5 (+b) -> loss, over 4
// data-parallel replicas: one AllReduce per weight gradient (conv, fc and its bias).
OpGraph tiny_step(int replicas) {
  OpGraph g;
  ModelBuilder b(g, 2, Precision::fp32);
  int x = b.image_input(3, 8, 8);
  int labels = b.labels();
  int y = b.conv(x, 4, 3, 1, 1, false, "conv");
  y = b.relu(y, "relu");
  y = b.global_avg_pool(y, "gap");
  y = b.dense(y, 5, true, "fc");
  b.softmax_cross_entropy(y, labels, "loss");
  TrainingOptions t;
  t.replicas = replicas;
  lower_to_training_step(g, t);
  count_all_work(g);
  return g;
}

int op_named(const OpGraph& g, const std::string& name) {
  for (int i = 0; i < g.num_ops(); ++i)
    if (g.op(i).name == name) return i;
  FAIL("no op " << name);
  return -1;
}

}  // namespace

TEST_CASE("chakra: a data-parallel training step encodes as an ET that decodes to the same graph", "[chakra]") {
  const OpGraph g = tiny_step(4);
  const int conv = op_named(g, "conv");
  std::vector<double> times(static_cast<size_t>(g.num_ops()), 0.0);
  times[static_cast<size_t>(conv)] = 2.4e-6;  // rounds to 2 us
  for (int i = 0; i < g.num_ops(); ++i)
    if (g.op(i).kind == OpKind::AllReduce) times[static_cast<size_t>(i)] = 5e-6;  // not written: the network's

  const std::string bytes = encode_chakra_trace(g, times);
  const auto msgs = split_stream(bytes);
  REQUIRE(msgs.size() == static_cast<size_t>(g.num_ops()) + 1);

  WireReader meta(msgs[0]);
  const Field v = meta.next();
  CHECK(v.number == 1);
  CHECK(onnx::as_string(v) == "0.0.4");

  std::vector<DecodedNode> nodes;
  for (size_t i = 1; i < msgs.size(); ++i) nodes.push_back(decode_node(msgs[i]));
  std::map<int, int> by_type;
  std::multiset<uint64_t> comm_sizes;
  for (const DecodedNode& n : nodes) {
    REQUIRE(n.id < static_cast<uint64_t>(g.num_ops()));
    const OpNode& op = g.op(static_cast<int>(n.id));
    CHECK(n.name == op.name);
    ++by_type[n.type];
    for (uint64_t d : n.data_deps) CHECK(d < n.id);  // schedule order is topological
    CHECK(n.uints.at("is_cpu_op") == 0);
    CHECK(n.strings.at("op_kind") == op_kind_name(op.kind));
    if (n.type == 7) {
      CHECK(op.kind == OpKind::AllReduce);
      CHECK(n.uints.at("comm_type") == 0);  // ALL_REDUCE
      CHECK_FALSE(n.has_duration);
      comm_sizes.insert(n.uints.at("comm_size"));
    }
  }
  CHECK(by_type[2] == 1);  // the host-fed batch: one MEM_LOAD_NODE
  CHECK(by_type[7] == 3);  // conv, fc and its bias
  CHECK(by_type[4] == g.num_ops() - 4);
  // Gradients in fp32: conv 4x3x3x3 = 108 floats, fc 4x5 = 20, bias 5.
  CHECK(comm_sizes == std::multiset<uint64_t>{20, 80, 432});

  const DecodedNode& c = nodes[static_cast<size_t>(conv)];  // schedule order = op id order
  REQUIRE(c.id == static_cast<uint64_t>(conv));
  CHECK(c.type == 4);
  // 2 FLOPs per MAC: 2 x (N 2 x Cout 4 x 8 x 8) outputs x (Cin 3 x 3 x 3) = 27,648.
  CHECK(c.uints.at("num_ops") == 27648);
  CHECK(c.has_duration);
  CHECK(c.duration_us == 2);
  CHECK(c.input_shapes == "[[2, 3, 8, 8], [4, 3, 3, 3]]");
  // The conv reads the input batch; not the update that later rewrites its weight.
  CHECK(c.data_deps == std::vector<uint64_t>{static_cast<uint64_t>(op_named(g, "input"))});
  const DecodedNode& ar = nodes[static_cast<size_t>(op_named(g, "allreduce/conv.weight"))];
  REQUIRE(ar.data_deps.size() == 1);
  CHECK(g.op(static_cast<int>(ar.data_deps[0])).kind == OpKind::Conv2DBackwardFilter);
  const DecodedNode& upd = nodes[static_cast<size_t>(op_named(g, "sgd/conv.weight"))];
  CHECK(std::find(upd.data_deps.begin(), upd.data_deps.end(), ar.id) != upd.data_deps.end());
  // Other nodes got no time: no duration field at all (proto3 leaves zeros out).
  CHECK_FALSE(nodes[static_cast<size_t>(op_named(g, "relu"))].has_duration);
}

TEST_CASE("chakra: one identical file per rank; bad output directories are user errors", "[chakra]") {
  const OpGraph g = tiny_step(2);
  const auto dir = std::filesystem::temp_directory_path() / "xpusim_chakra_test";
  std::filesystem::remove_all(dir);
  const auto paths = write_chakra_traces(dir.string(), "tiny net/v1", g, {}, 2);
  REQUIRE(paths.size() == 2);
  CHECK(std::filesystem::path(paths[0]).filename() == "tiny_net_v1.0.et");
  CHECK(std::filesystem::path(paths[1]).filename() == "tiny_net_v1.1.et");
  auto slurp = [](const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  };
  CHECK(slurp(paths[0]) == encode_chakra_trace(g, {}));
  CHECK(slurp(paths[1]) == slurp(paths[0]));
  CHECK_THROWS_AS(write_chakra_traces(dir.string(), "tiny", g, {}, 0), FieldError);
  CHECK_THROWS_AS(write_chakra_traces(paths[0], "tiny", g, {}, 1), UserError);  // a file, not a directory
  CHECK_THROWS_AS(encode_chakra_trace(g, {1.0}), InternalError);
  std::filesystem::remove_all(dir);
}
