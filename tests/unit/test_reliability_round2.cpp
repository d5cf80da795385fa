// Reliability, round two (issue 34): CRC-32C test vectors, input caps and special files,
// YAML alias and nesting bounds, output identity and advisory locks, and the sweep YAML
// values that were accepted as nonsense (NaN constraints, negative power, 1e300 epochs, a
// field set twice, grids past the point limit). Each case fails with the message asked for.
#include <catch2/catch.hpp>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>

#include "common/crc32c.hpp"
#include "common/error.hpp"
#include "common/file_guard.hpp"
#include "common/spec_reader.hpp"
#include "models/zoo.hpp"
#include "onnx_writer.hpp"
#include "sweep/sweep_spec.hpp"

using namespace xpusim;
using Catch::Contains;

namespace {

std::filesystem::path scratch() {
  auto d = std::filesystem::temp_directory_path() / "xpusim_test_round2";
  std::filesystem::create_directories(d);
  return d;
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = (scratch() / name).string();
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("crc32c: published check values", "[reliability]") {
  // RFC 3720 (iSCSI) appendix B.4 and the usual "123456789" check value.
  CHECK(crc32c(0, "123456789", 9) == 0xE3069283u);
  CHECK(crc32c(0, "", 0) == 0u);
  const std::string zeros(32, '\0'), ones(32, '\xff');
  CHECK(crc32c(0, zeros.data(), zeros.size()) == 0x8A9136AAu);
  CHECK(crc32c(0, ones.data(), ones.size()) == 0x62A8AB43u);
  // Continuing over pieces gives the whole's value.
  CHECK(crc32c(crc32c(0, "1234", 4), "56789", 5) == 0xE3069283u);
  CHECK(crc32c_hex(0xE3069283u) == "e3069283");
}

TEST_CASE("inputs: special files and oversized files are refused with the reason", "[reliability]") {
  const std::string dir = scratch().string();
  CHECK_THAT(error_of([&] { read_input_file(dir, kMaxTextInputBytes); }), Contains("is a directory, expected a file"));
  CHECK_THAT(error_of([] { read_input_file("/dev/zero", kMaxTextInputBytes); }),
             Contains("/dev/zero: not a regular file"));
  const std::string fifo = (scratch() / "fifo").string();
  std::filesystem::remove(fifo);
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  // Opened without blocking: a FIFO with no writer returns at once.
  double s = seconds_of([&] { CHECK_THAT(error_of([&] { read_input_file(fifo, kMaxTextInputBytes); }), Contains("not a regular file")); });
  CHECK(s < 1.0);
  std::filesystem::remove(fifo);
  const std::string big = write_file("big.txt", std::string(3 << 20, 'x'));
  CHECK(read_input_file(big, kMaxTextInputBytes).size() == size_t(3) << 20);
  setenv("XPUSIM_MAX_INPUT_MB", "2", 1);
  CHECK_THAT(error_of([&] { read_input_file(big, kMaxTextInputBytes); }),
             Contains("3145728 bytes, more than the 2 MiB limit") && Contains("XPUSIM_MAX_INPUT_MB"));
  setenv("XPUSIM_MAX_INPUT_MB", "-1", 1);
  CHECK_THAT(error_of([&] { read_input_file(big, kMaxTextInputBytes); }), Contains("XPUSIM_MAX_INPUT_MB: '-1'"));
  unsetenv("XPUSIM_MAX_INPUT_MB");
  // YAML has its own, smaller cap: a 5 MB list under an unknown key took 14 s to reject.
  const std::string yaml = write_file("big.yaml", "a: [" + std::string(5 << 20, ' ') + "]\n");
  CHECK_THAT(error_of([&] { load_yaml_file(yaml); }), Contains("limit for a YAML spec"));
}

TEST_CASE("yaml: alias expansion and nesting are bounded before the tree is walked", "[reliability]") {
  // "Billion laughs": nine levels of ten aliases, 10^9 nodes from ~400 bytes.
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'j'; ++c) {
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int k = 0; k < 10; ++k) bomb += std::string(k ? ", *" : "*") + prev;
    bomb += "]\n";
    prev = c;
  }
  bomb += "unknown_key: *j\n";
  const std::string path = write_file("bomb.yaml", bomb);
  std::string err;
  double s = seconds_of([&] { err = error_of([&] { load_yaml_file(path); }); });
  CHECK_THAT(err, Contains("an alias *name counting as the values it stands for"));
  CHECK(s < 2.0);
  // 20,000 nested '[': a clear message with the line, not yaml-cpp's "bad file".
  const std::string deep = write_file("deep.yaml", "a: " + std::string(20000, '[') + "\n");
  err = error_of([&] { load_yaml_file(deep); });
  CHECK_THAT(err, Contains("deep.yaml:1: YAML nested more than 64 levels deep"));
  // A few aliases, as configs use them, still load.
  const std::string fine = write_file("fine.yaml", "base: &b {x: 1}\nother: *b\n");
  CHECK(load_yaml_file(fine)["other"]["x"].as<int>() == 1);
}

TEST_CASE("outputs: the same file as an input or another output is refused; locks exclude", "[reliability]") {
  const std::string in = write_file("in.yaml", "x: 1\n");
  const std::string link = (scratch() / "link.csv").string();
  std::filesystem::remove(link);
  std::filesystem::create_symlink(in, link);
  CHECK(same_file(in, link));
  CHECK_THAT(error_of([&] { refuse_output_over_input("--output", link, {in}); }),
             Contains("--output: " + link + " is the same file as the input " + in));
  CHECK_NOTHROW(refuse_output_over_input("--output", (scratch() / "new.csv").string(), {in}));
  CHECK_THAT(error_of([&] { refuse_shared_outputs({{"--trace", "a/x.vcd"}, {"--vcd", "a/./x.vcd"}}); }),
             Contains("--vcd: a/./x.vcd is also the --trace output"));
  CHECK_NOTHROW(refuse_shared_outputs({{"--trace", "x.json"}, {"--vcd", ""}}));
  // flock locks belong to an open file description: a second lock in this process conflicts.
  const std::string rows = (scratch() / "rows.csv").string();
  {
    FileLock first(rows, "");
    CHECK(first.held());
    CHECK_THAT(error_of([&] { FileLock second(rows, "sweep: row file"); }),
               Contains("sweep: row file: " + rows + ": in use by another xpusim process"));
  }
  FileLock again(rows, "");  // released with the first
  CHECK(again.held());
  FileLock dev("/dev/null", "");  // not a regular file: nothing to lock
  CHECK_FALSE(dev.held());
}

TEST_CASE("sweep: tampered values and oversized grids are refused before any point", "[reliability][sweep]") {
  const std::string base = "fixed: {device: v100_sxm2_16gb, model: alexnet, precision: fp32}\naxes:\n  batch: [32, 64]\n";
  auto err = [&](const std::string& name, const std::string& text) {
    const std::string p = write_file(name + ".yaml", text);
    return error_of([&] { sweep::load_sweep(p); });
  };
  CHECK_THAT(err("nan", base + "constraints:\n  max: {step_time_s: .nan}\n"),
             Contains("constraints.max.step_time_s: expected a finite number, not .nan"));
  CHECK_THAT(err("power", base + "  option_power_w: [300, -5]\n"), Contains("option_power_w: '-5' is not a power in (0, 1e7] W"));
  CHECK_THAT(err("epochs", base + "target: {dataset: imagenet, epochs: 1e300}\n"),
             Contains("target.epochs: must be in [0, 1e6]"));
  CHECK_THAT(err("twice", base + "  model: [alexnet, resnet50]\n"),
             Contains("axes.model: sets model, which fixed.model already sets"));
  CHECK_THAT(err("zip_twice", base + "  hw:\n    - {batch: 16, count: 1}\n"),
             Contains("axes.hw: sets batch, which axes.batch already sets"));
  // count: 1e12 is refused before one value is made (it grew past 2 GB), and fast.
  std::string e;
  double s = seconds_of([&] {
    e = err("huge_range", "fixed: {device: v100_sxm2_16gb, model: alexnet, precision: fp32}\naxes:\n"
                          "  batch: {from: 1, to: 1000, count: 1000000000000}\n");
  });
  CHECK_THAT(e, Contains("1000000000000 values is more than 1000000 per axis"));
  CHECK(s < 1.0);
  // The grid's point count is a product computed before the points exist.
  std::string axes;
  for (const char* k : {"set.a", "set.b", "set.c"}) axes += std::string("  ") + k + ": {from: 1, to: 2, count: 1000}\n";
  e = err("huge_grid", "fixed: {device: v100_sxm2_16gb, model: alexnet, precision: fp32, batch: 32}\naxes:\n" + axes);
  CHECK_THAT(e, Contains("axes: 1000000000 grid points is more than 100000000"));
}

namespace {

namespace W = xpusim::test_onnx;

// conv(3->8) -> ReLU -> GAP -> Flatten -> Gemm(8->10), with the pieces the cases change.
W::GraphSpec onnx_cnn() {
  W::GraphSpec g;
  g.inputs = {W::value_info("x", 1, {1, 3, 8, 8}, {"N"})};
  g.outputs = {W::value_info("y", 1, {1, 10})};
  g.initializers = {W::tensor("w", {8, 3, 3, 3}), W::tensor("fw", {10, 8}), W::tensor("fb", {10})};
  g.nodes = {W::node("Conv", {"x", "w"}, {"c"}, "conv", {W::ints_attr("kernel_shape", {3, 3}), W::ints_attr("pads", {1, 1, 1, 1})}),
             W::node("Relu", {"c"}, {"r"}, "relu"), W::node("GlobalAveragePool", {"r"}, {"gp"}, "gap"),
             W::node("Flatten", {"gp"}, {"f"}, "flatten"), W::node("Gemm", {"f", "fw", "fb"}, {"y"}, "fc", {W::int_attr("transB", 1)})};
  return g;
}

std::string onnx_error(const std::string& name, const W::GraphSpec& g) {
  const std::string path = write_file(name, W::model(g));
  return error_of([&] {
    GraphOptions o;
    o.batch = 2;
    o.training = true;
    build_graph(find_model(path), o);
  });
}

}  // namespace

TEST_CASE("onnx: values the file states wrongly are named as the file's, not as a missing --input-shape", "[reliability][onnx]") {
  CHECK(onnx_error("ok.onnx", onnx_cnn()).empty());
  W::GraphSpec g = onnx_cnn();
  g.inputs = {W::value_info("x", 1, {1, 0, 8, 8}, {"N"})};
  std::string e = onnx_error("dim0.onnx", g);
  CHECK_THAT(e, Contains("input 'x' dimension 1 is 0 (must be in [1, 2147483647])"));
  CHECK_THAT(e, !Contains("input_shape") && !Contains("dynamic"));
  g.inputs = {W::value_info("x", 1, {1, 3, std::numeric_limits<int64_t>::min(), 8}, {"N"})};
  CHECK_THAT(onnx_error("dim63.onnx", g), Contains("dimension 2 is -9223372036854775808") && !Contains("dynamic"));
  g = onnx_cnn();
  g.initializers.push_back(W::tensor("w", {8, 3, 3, 3}));
  CHECK_THAT(onnx_error("dup_init.onnx", g), Contains("initializer 'w' is given twice"));
  g = onnx_cnn();
  g.inputs = {W::value_info("x", 11, {1, 3, 8, 8}, {"N"})};
  CHECK_THAT(onnx_error("double.onnx", g), Contains("input 'x' is double (float64)"));
  g = onnx_cnn();
  g.nodes.insert(g.nodes.begin() + 2, W::node("MaxPool", {"r"}, {"p"}, "pool",
                                              {W::ints_attr("kernel_shape", {2, 2}), W::ints_attr("strides", {2, 2}),
                                               W::int_attr("ceil_mode", -1)}));
  g.nodes[3] = W::node("GlobalAveragePool", {"p"}, {"gp"}, "gap");
  CHECK_THAT(onnx_error("ceil.onnx", g), Contains("node 'pool'") && Contains("ceil_mode must be 0 or 1, got -1"));
  g = onnx_cnn();
  g.initializers.push_back(W::tensor("shape", {2}, 7, {0, -1}));
  g.nodes[4] = W::node("Gemm", {"f", "fw", "fb"}, {"g"}, "fc", {W::int_attr("transB", 1)});
  g.nodes.push_back(W::node("Reshape", {"g", "shape"}, {"y"}, "reshape", {W::int_attr("allowzero", int64_t(1) << 62)}));
  CHECK_THAT(onnx_error("allowzero.onnx", g), Contains("allowzero must be 0 or 1, got 4611686018427387904"));
  // A file concatenated with itself: two graph fields.
  const std::string once = W::model(onnx_cnn());
  const std::string path = write_file("twice.onnx", once + once);
  CHECK_THAT(error_of([&] { find_model(path); }), Contains("a second graph (two models concatenated?)"));
}
