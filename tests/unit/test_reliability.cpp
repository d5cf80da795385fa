// Issue 16 regressions below the CLI: UTF-8 checks, checked arithmetic and file writes,
// YAML duplicate keys and non-finite numbers, directories where files are expected, tensor
// sizes that would overflow the work and memory counts, and systolic cycles that wrapped.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "common/checked_io.hpp"
#include "common/error.hpp"
#include "common/fingerprint.hpp"
#include "common/spec_reader.hpp"
#include "costmodel/convergence.hpp"
#include "costmodel/pricing.hpp"
#include "engine/framework_spec.hpp"
#include "engine/platform_spec.hpp"
#include "models/graph.hpp"
#include "models/zoo.hpp"
#include "sim/tpu/scalesim.hpp"

using namespace xpusim;

namespace {
std::string write_tmp(const std::string& name, const std::string& text) {
  std::string path = (std::filesystem::temp_directory_path() / ("xpusim_rel_" + name)).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}
}  // namespace

TEST_CASE("UTF-8 validation finds the first bad byte", "[reliability]") {
  CHECK(first_invalid_utf8("plain ascii") == std::string_view::npos);
  CHECK(first_invalid_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80") == std::string_view::npos);
  CHECK(first_invalid_utf8("ab\xFF") == 2);
  CHECK(first_invalid_utf8("\xC0\xAF") == 0);          // overlong '/'
  CHECK(first_invalid_utf8("x\xED\xA0\x80") == 1);     // UTF-16 surrogate
  CHECK(first_invalid_utf8("\xF4\x90\x80\x80") == 0);  // past U+10FFFF
  CHECK(first_invalid_utf8("\xE2\x82") == 0);          // truncated
  CHECK(line_of_offset("a\nb\nc", 4) == 3);
  std::string bom = "\xEF\xBB\xBFLayer";
  CHECK(strip_utf8_bom(bom));
  CHECK(bom == "Layer");
}

TEST_CASE("checked arithmetic throws instead of wrapping", "[reliability]") {
  CHECK(checked_mul(1 << 20, 1 << 20, "x") == (int64_t{1} << 40));
  CHECK_THROWS_WITH(checked_mul(int64_t{1} << 40, int64_t{1} << 40, "layer 'c'"),
                    "layer 'c': too large (integer overflow)");
  CHECK_THROWS_AS(checked_add(INT64_MAX, 1, "x"), UserError);
}

TEST_CASE("YAML: duplicate keys name both lines", "[reliability][spec]") {
  CHECK_THROWS_WITH(parse_yaml_text("a: 1\nb:\n  c: 2\n  c: 3\n", "f.yaml"),
                    "f.yaml:4: c: duplicate key (first given at line 3)");
  CHECK_NOTHROW(parse_yaml_text("a: 1\nb: {a: 2}\n", "f.yaml"));  // same name, other mapping
}

// yaml-cpp's Load reads the first document only: the keys after a '---' were silently lost.
TEST_CASE("YAML: a second document is an error naming its line", "[reliability][spec]") {
  CHECK_THROWS_WITH(parse_yaml_text("a: 1\n---\nname: other\n", "f.yaml"),
                    "f.yaml:3: a second YAML document (after '---'): a spec file holds one");
  CHECK_THROWS_WITH(parse_yaml_text("---\na: 1\n...\n---\n- x\n", "f.yaml"), Catch::StartsWith("f.yaml:5: a second YAML document"));
  CHECK(parse_yaml_text("---\na: 1\n...\n", "f.yaml")["a"].as<int>() == 1);  // explicit start and end: one document
  CHECK(parse_yaml_text("a: 1\n---\n", "f.yaml")["a"].as<int>() == 1);        // an empty trailing document
  CHECK(parse_yaml_text("", "f.yaml").IsNull());
}

// yaml-cpp's LoadAll never returns on a stray flow token (a lone ','): its parser reports an
// empty document per call without consuming the token. Found by all four YAML fuzzers in CI
// the day the second-document check used LoadAll; the scan is now bounded by the '---'/'...'
// markers. A hang would show as this test's timeout.
TEST_CASE("YAML: a lone flow token is read once, not for ever", "[reliability][spec]") {
  CHECK_THROWS_WITH(parse_yaml_text(",", "f.yaml"), "f.yaml:1: YAML syntax error: a token outside any [list] or {mapping} (a stray ',')");
  CHECK_THROWS_WITH(parse_yaml_text("a: 1\n,\n", "f.yaml"), Catch::StartsWith("f.yaml:2: YAML syntax error"));
  CHECK_THROWS_WITH(parse_yaml_text("a: 1\n---\n,\n---\nb: 2\n", "f.yaml"), Catch::StartsWith("f.yaml:3: YAML syntax error"));
  CHECK(parse_yaml_text("a: [1, 2]\n", "f.yaml")["a"].size() == 2);  // commas inside a flow list
}

TEST_CASE("YAML: invalid UTF-8 is an error with file:line", "[reliability][spec]") {
  CHECK_THROWS_WITH(parse_yaml_text("a: 1\nb: \xFF\n", "f.yaml"), Catch::StartsWith("f.yaml:2: not valid UTF-8"));
}

TEST_CASE("YAML: .inf and .nan are rejected for every number", "[reliability][spec]") {
  for (const char* v : {".inf", "-.inf", ".nan"}) {  // (1e999 fails earlier: not a number)
    YAML::Node n = parse_yaml_text(std::string("x: ") + v + "\nl: [1, " + v + "]\nm: {a: " + v + "}\n", "f.yaml");
    SpecReader r(n, "f.yaml");
    CHECK_THROWS_WITH(r.number("x", std::nullopt, "", ""), Catch::Contains("x: must be a finite number"));
    CHECK_THROWS_WITH(r.numbers("l", std::nullopt, "", ""), Catch::Contains("l: must be finite"));
    CHECK_THROWS_WITH(r.number_map("m", "", ""), Catch::Contains("a: must be a finite number"));
  }
}

TEST_CASE("a directory where a file is expected is named as such", "[reliability]") {
  std::string dir = std::filesystem::temp_directory_path().string();
  CHECK_THROWS_WITH(read_text_file(dir), dir + ": is a directory, expected a file");
  CHECK_THROWS_WITH(write_file_checked(dir, [](std::ostream&) {}, "--out"),
                    "--out: " + dir + ": is a directory, expected a file");
}

TEST_CASE("write failures are errors naming the path", "[reliability]") {
  if (!std::filesystem::exists("/dev/full")) return;  // not Linux
  CHECK_THROWS_WITH(write_file_checked("/dev/full", [](std::ostream& os) { os << std::string(1 << 16, 'x'); }, "--out"),
                    Catch::StartsWith("--out: /dev/full: write failed"));
}

TEST_CASE("tensor sizes that would overflow the counts are rejected", "[reliability][graph]") {
  OpGraph g;
  CHECK_NOTHROW(g.add_tensor("ok", {{1024, 1024, 1024}, DType::fp32}, TensorRole::activation));
  CHECK_THROWS_WITH(g.add_tensor("huge", {{int64_t{1} << 40, 784}, DType::fp32}, TensorRole::activation),
                    Catch::Contains("tensor 'huge' of shape [1099511627776,784] would hold more than 2^46 bytes"));
  // Would wrap int64 to a small positive number without the checked product.
  CHECK_THROWS_AS(g.add_tensor("wrap", {{int64_t{1} << 62, 4, 4}, DType::fp32}, TensorRole::activation), UserError);
}

TEST_CASE("a sequential model whose layers cannot fit names the layer's line", "[reliability][zoo]") {
  std::string path = write_tmp("bad_shapes.yaml",
                               "name: bad_shapes\nfamily: sequential\nclasses: 10\ndataset: mnist\ninput: [1, 28, 28]\n"
                               "params:\n  layers:\n    - {type: max_pool, size: 16}\n    - {type: conv2d, filters: 8, kernel: 5}\n"
                               "    - {type: flatten}\n    - {type: dense, units: 10}\n");
  ModelSpec s = load_model_spec(path);
  GraphOptions o;
  o.batch = 1;
  CHECK_THROWS_WITH(build_graph(s, o), Catch::StartsWith(path + ":9: params.layers[1] (conv2d): "));
  std::filesystem::remove(path);
}

// Found by the model_yaml fuzzer (2026-11-25): `family: vgg` with `task: sequence` and
// `input: [1]` read input[1] and input[2] out of bounds (ASan heap-buffer-overflow in
// image_inputs). A family's task is now part of its registry entry.
TEST_CASE("model files: a family given the other kind of input is an error naming the line", "[reliability][zoo]") {
  std::string img = write_tmp("vgg_seq.yaml",
                              "name: v\nfamily: vgg\ndataset: cifar10\ntask: sequence\ninput: [1]\nclasses: 1\n");
  CHECK_THROWS_WITH(load_model_spec(img), img + ":4: task: the vgg family builds image models: task must be image "
                                                "(input [C, H, W])");
  // No task key: the default (image) meets a sequence family; the error names the family's line.
  std::string seq = write_tmp("gpt_img.yaml", "name: g\nfamily: transformer\ndataset: cifar10\ninput: [3, 32, 32]\n"
                                              "classes: 10\n");
  CHECK_THROWS_WITH(load_model_spec(seq), seq + ":2: family: the transformer family builds sequence models: task "
                                                "must be sequence (input [T])");
  CHECK_NOTHROW(load_zoo());  // every zoo model's family accepts its task
  std::filesystem::remove(img);
  std::filesystem::remove(seq);
}

// Found by the model_yaml fuzzer: `blocks: [4, 4, 8651]` built a 277,131-op training step
// (1.6 s, 400 MB; over 10 s under ASan), and `layers: 2000000000` would never finish. All stop
// at kMaxGraphOps with the file named, fast.
TEST_CASE("model files: a graph past the op limit is an error naming the file", "[reliability][zoo]") {
  std::string deep = write_tmp("deep_resnet.yaml",
                               "name: deep\nfamily: resnet\nclasses: 10\ndataset: cifar10\ninput: [3, 32, 32]\n"
                               "params:\n  blocks: [4, 4, 8651]\n  cifar_stem: true\n");
  GraphOptions o;
  o.batch = 2;
  CHECK_THROWS_WITH(build_graph(load_model_spec(deep), o),
                    deep + ": params: the graph has more than 50000 ops (xpusim's limit; the largest zoo training "
                           "step has under 2,000)");  // the forward graph alone passes it
  std::string third = write_tmp("third_resnet.yaml",
                                "name: third\nfamily: resnet\nclasses: 10\ndataset: cifar10\ninput: [3, 32, 32]\n"
                                "params:\n  blocks: [4, 4, 2000]\n  cifar_stem: true\n");
  CHECK_THROWS_WITH(build_graph(load_model_spec(third), o),
                    Catch::StartsWith(third + ": params: the forward graph has ") &&
                        Catch::Contains("ops, over a third of 50000"));  // refused before the training lowering
  std::filesystem::remove(third);
  std::string ok = write_tmp("deep_ok.yaml",
                             "name: deep_ok\nfamily: resnet\nclasses: 10\ndataset: cifar10\ninput: [3, 32, 32]\n"
                             "params:\n  blocks: [200, 200, 200]\n  bottleneck: false\n  cifar_stem: true\n");
  CHECK(build_graph(load_model_spec(ok), o).num_ops() > 10000);  // ResNet-1202 (He et al. 2016) still builds
  std::filesystem::remove(deep);
  std::filesystem::remove(ok);
}

TEST_CASE("model files: negative blocks and oversized layers are rejected", "[reliability][zoo]") {
  std::string neg = write_tmp("neg_blocks.yaml",
                              "name: neg\nfamily: resnet\nclasses: 10\ndataset: cifar10\ninput: [3, 32, 32]\n"
                              "params:\n  blocks: [3, -1, 3]\n  cifar_stem: true\n");
  CHECK_THROWS_WITH(load_model_spec(neg), Catch::Contains("params.blocks: each stage needs 1 to 10000 blocks, got -1"));
  std::string big = write_tmp("big_dense.yaml",
                              "name: big\nfamily: sequential\nclasses: 10\ndataset: mnist\ninput: [1, 28, 28]\n"
                              "params:\n  layers:\n    - {type: flatten}\n    - {type: dense, units: 4294967306}\n");
  CHECK_THROWS_WITH(load_model_spec(big), Catch::Contains("units: must be in [1, 2147483647]"));
  std::filesystem::remove(neg);
  std::filesystem::remove(big);
}

TEST_CASE("systolic cycles never wrap: huge layers and arrays are errors", "[reliability][tpu]") {
  tpu::TopologyLayer big{"big", 1 << 24, 1 << 24, 1, 1, 1 << 24, 1 << 24, 1};
  CHECK_THROWS_WITH(tpu::scalesim_layer(big, 128, 128, tpu::Dataflow::ws), "layer 'big': too large (integer overflow)");
  tpu::TopologyLayer ok{"ok", 56, 56, 3, 3, 64, 64, 1};
  CHECK(tpu::scalesim_layer(ok, 128, 128, tpu::Dataflow::ws).cycles > 0);
  CHECK_THROWS_AS(tpu::scalesim_layer(ok, int64_t{1} << 40, 128, tpu::Dataflow::ws), FieldError);
}

TEST_CASE("topology CSV: a UTF-8 byte-order mark is accepted", "[reliability][tpu]") {
  std::string text = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
                     "conv1, 224, 224, 7, 7, 3, 64, 2,\n";
  std::string plain = write_tmp("topo_plain.csv", text);
  std::string bom = write_tmp("topo_bom.csv", "\xEF\xBB\xBF" + text);
  auto a = tpu::read_topology_csv(plain);
  auto b = tpu::read_topology_csv(bom);
  REQUIRE(a.size() == 1);
  REQUIRE(b.size() == 1);
  CHECK(a[0].name == b[0].name);
  CHECK(a[0].channels == b[0].channels);
  std::filesystem::remove(plain);
  std::filesystem::remove(bom);
}

TEST_CASE("fingerprints tell inputs apart", "[reliability][resume]") {
  CHECK(Fingerprint().add("a", "1").hex() == Fingerprint().add("a", "1").hex());
  CHECK(Fingerprint().add("a", "1").hex() != Fingerprint().add("a", "2").hex());
  CHECK(Fingerprint().add("ab", "c").hex() != Fingerprint().add("a", "bc").hex());  // length-prefixed
  CHECK(Fingerprint().add("a", "1").add("b", "2").hex() != Fingerprint().add("b", "2").add("a", "1").hex());
  CHECK(fnv1a64_hex("", 0) == "cbf29ce484222325");     // FNV-1a 64 offset basis
  CHECK(fnv1a64_hex("a", 1) == "af63dc4c8601ec8c");    // published test vector
}

TEST_CASE("atomic writes keep the old file when writing fails", "[reliability][resume]") {
  const std::string path = write_tmp("atomic.txt", "old\n");
  CHECK_THROWS_AS(write_file_atomic(path, [](std::ostream& os) {
                    os << "half";
                    throw UserError("stopped while writing");
                  }),
                  UserError);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text == "old\n");
  write_file_atomic(path, [](std::ostream& os) { os << "new\n"; });
  std::ifstream in2(path);
  std::string text2((std::istreambuf_iterator<char>(in2)), std::istreambuf_iterator<char>());
  CHECK(text2 == "new\n");
  // Through a symlink: the file it names is replaced, the link stays a link.
  const std::string link = path + ".link";
  std::filesystem::remove(link);
  std::filesystem::create_symlink(path, link);
  write_file_atomic(link, [](std::ostream& os) { os << "linked\n"; });
  CHECK(std::filesystem::is_symlink(link));
  std::ifstream in3(path);
  std::string text3((std::istreambuf_iterator<char>(in3)), std::istreambuf_iterator<char>());
  CHECK(text3 == "linked\n");
  // A directory where the file should be names the path.
  CHECK_THROWS_WITH(write_file_atomic(std::filesystem::temp_directory_path().string(), [](std::ostream&) {}, "--out"),
                    Catch::Contains("is a directory"));
}

// Found by the loader fuzzers added for the YAML kinds and the training log (issue 16).
TEST_CASE("framework profiles: a name list holding a list is an error, not a crash", "[reliability][spec]") {
  std::string p = write_tmp("fw_nested.yaml", "name: fw\nnames: [[keras]]\nengines: [analytical]\n");
  CHECK_THROWS_WITH(load_framework_spec(p), p + ":2: names: expected a list of names");
  std::filesystem::remove(p);
}

TEST_CASE("training logs: epochs and accuracies are range-checked", "[reliability][costmodel]") {
  const std::string head = "epoch\tseconds\ttrain_loss\ttest_accuracy\n";
  std::string nan_epoch = write_tmp("log_nan.tsv", head + "1\t2\t0.5\t0.8\nnan\t3\t0.4\t0.9\n");
  CHECK_THROWS_WITH(cost::read_train_log(nan_epoch), nan_epoch + ":3: epoch: must be a finite number >= 0, got 'nan'");
  std::string neg_acc = write_tmp("log_neg.tsv", head + "1\t2\t0.5\t-0.1\n");
  CHECK_THROWS_WITH(cost::read_train_log(neg_acc), Catch::StartsWith(neg_acc + ":2: test_accuracy: must be a fraction"));
  std::string over = write_tmp("log_over.tsv", head + "1\t2\t0.5\t150\n");
  CHECK_THROWS_WITH(cost::read_train_log(over), Catch::Contains("percentage in (1, 100], got '150'"));
  std::string pct = write_tmp("log_pct.tsv", head + "1\t2\t0.5\t85\n2\t4\t0.4\t0.9\n");
  auto pts = cost::read_train_log(pct);
  REQUIRE(pts.size() == 2);
  CHECK(pts[0].accuracy == Approx(0.85));
  CHECK(pts[1].accuracy == Approx(0.9));
  CHECK_THROWS_WITH(cost::read_train_log("/dev/zero"), "/dev/zero: training log not found or not a regular file");
  for (const auto& f : {nan_epoch, neg_acc, over, pct}) std::filesystem::remove(f);
}

TEST_CASE("datasets: negative sizes are rejected", "[reliability][spec]") {
  std::string p = write_tmp("datasets_neg.yaml", "mnist:\n  train_examples: 60000\n  stored_bytes_per_example: -784\n");
  CHECK_THROWS_WITH(load_datasets_file(p), Catch::Contains(":3: mnist.stored_bytes_per_example: must be >= 0"));
  std::filesystem::remove(p);
}

TEST_CASE("price catalogues: offers that include each other are an error, not a stack overflow", "[reliability][costmodel]") {
  const auto dir = std::filesystem::temp_directory_path() / "xpusim_rel_pricing_cycle";
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "cyc.yaml").string();
  std::ofstream(file) << "catalog: cyc\nprovider: gcp\ndate: 2017-07\nsource: test\nbilling:\n  granularity_s: 60\noffers:\n"
                         "  - name: a\n    on_demand_usd_per_h: 1\n    includes: [cyc/b]\n"
                         "  - name: b\n    on_demand_usd_per_h: 1\n    includes: [cyc/a]\n";
  CHECK_THROWS_WITH(cost::load_price_catalog(dir.string()),
                    Catch::Contains("includes: offers include each other in a cycle: cyc/a -> cyc/b -> cyc/a"));
  std::ofstream(file) << "catalog: cyc\nprovider: gcp\ndate: 2017-07\nsource: test\nbilling:\n  granularity_s: 60\noffers:\n"
                         "  - name: a\n    on_demand_usd_per_h: 1\n    includes: [cyc/a]\n";
  CHECK_THROWS_WITH(cost::load_price_catalog(dir.string()), Catch::Contains("cycle: cyc/a -> cyc/a"));
  std::filesystem::remove_all(dir);
}
