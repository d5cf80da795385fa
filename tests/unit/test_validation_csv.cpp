// Reference CSV parsing (RFC 4180 quoting, missing values, header and field errors), metric
// names, and the error arithmetic (sign of error_pct, MAPE).
#include <catch2/catch.hpp>

#include <sstream>

#include "common/error.hpp"
#include "validation/metrics.hpp"
#include "validation/reference_csv.hpp"

using namespace xpusim;
using namespace xpusim::validation;

namespace {
const std::string kHeader =
    "source,device,num_devices,setup,framework,model,dataset,batch_per_device,precision,data,metric,value,unit,note\n";

std::string error_of(const std::string& text) {
  try {
    parse_reference_csv(text, "ref.csv");
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("csv: quoted fields keep commas, doubled quotes and newlines", "[validation][csv]") {
  auto recs = parse_csv("a,\"b, c\",\"say \"\"hi\"\"\"\n\"multi\nline\",x,\r\nlast,,\n", "t.csv");
  REQUIRE(recs.size() == 3);
  CHECK(recs[0].fields == std::vector<std::string>{"a", "b, c", "say \"hi\""});
  CHECK(recs[1].fields == std::vector<std::string>{"multi\nline", "x", ""});
  CHECK(recs[1].line == 2);
  CHECK(recs[2].line == 4);  // the quoted newline moved the next record down one line
  CHECK(recs[2].fields == std::vector<std::string>{"last", "", ""});
}

TEST_CASE("csv: malformed quoting is an error with file and line", "[validation][csv]") {
  CHECK_THROWS_WITH(parse_csv("a,\"open\nb\n", "t.csv"), Catch::Contains("t.csv:1: a quoted field is never closed"));
  CHECK_THROWS_WITH(parse_csv("a,b\"c\n", "t.csv"), Catch::Contains("t.csv:1: column 2: a quote inside"));
  CHECK_THROWS_WITH(parse_csv("x\n\"q\"z,1\n", "t.csv"), Catch::Contains("t.csv:2: column 1: text after a closing quote"));
}

TEST_CASE("reference csv: rows, quoted source with commas, missing values", "[validation][csv]") {
  std::string text = kHeader +
                     "\"Study, 2017\",p100_sxm2,8,dgx1_nvlink,tensorflow,resnet50,imagenet,64,fp32,synthetic,"
                     "train_throughput,1734,images/s,\n"
                     "blog,tpu_v2,,cloud_tpu_v2-8,,resnet50,imagenet,,bf16,real,cost_to_top1_0.757,,usd,\"a \"\"note\"\", here\"\n";
  auto rows = parse_reference_csv(text, "ref.csv");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].line == 2);
  CHECK(rows[0].source == "Study, 2017");
  CHECK(rows[0].num_devices == 8);
  CHECK(rows[0].batch_per_device == 64);
  CHECK(rows[0].value == Approx(1734));
  CHECK(rows[1].line == 3);
  CHECK_FALSE(rows[1].num_devices.has_value());
  CHECK_FALSE(rows[1].batch_per_device.has_value());
  CHECK_FALSE(rows[1].value.has_value());
  CHECK(rows[1].framework.empty());
  CHECK(rows[1].note == "a \"note\", here");
}

TEST_CASE("reference csv: columns may come in any order", "[validation][csv]") {
  std::string text =
      "metric,value,device,num_devices,setup,framework,model,dataset,batch_per_device,precision,data,unit,note,source\n"
      "train_throughput,51.9,k80,1,gce_single_host,tensorflow,resnet50,imagenet,64,fp32,synthetic,images/s,,s\n";
  auto rows = parse_reference_csv(text, "ref.csv");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].device == "k80");
  CHECK(rows[0].value == Approx(51.9));
  CHECK(rows[0].source == "s");
}

TEST_CASE("reference csv: errors name file, line and column", "[validation][csv]") {
  CHECK(error_of("") == "ref.csv:1: header: the file is empty (expected 14 columns: source,device,...)");
  CHECK(error_of("source,device\n") == "ref.csv:1: num_devices: missing column in the header");
  CHECK(error_of(kHeader.substr(0, kHeader.size() - 1) + ",extra\n") == "ref.csv:1: extra: unknown column");
  CHECK(error_of(kHeader + "s,d,1,,f,m,ds,8,fp32,synthetic,train_throughput,12x,images/s,\n") ==
        "ref.csv:2: value: expected a number, got '12x'");
  CHECK(error_of(kHeader + "s,d,two,,f,m,ds,8,fp32,synthetic,train_throughput,12,images/s,\n") ==
        "ref.csv:2: num_devices: expected an integer, got 'two'");
  CHECK(error_of(kHeader + "s,d,1,,f,m,ds,0,fp32,synthetic,train_throughput,12,images/s,\n") ==
        "ref.csv:2: batch_per_device: must be > 0, got 0");
  CHECK(error_of(kHeader + "\n\ns,d,1,,f,m\n") == "ref.csv:4: row: has 6 fields, the header has 14");
}

TEST_CASE("reference csv: write then parse round-trips", "[validation][csv]") {
  ReferenceRow r;
  r.source = "a, \"quoted\" source";
  r.device = "host";
  r.num_devices = 2;
  r.setup = "host";
  r.framework = "xpusim-cpu";
  r.model = "mnist_mlp";
  r.dataset = "mnist";
  r.batch_per_device = 128;
  r.precision = "fp32";
  r.data = "synthetic";
  r.metric = "train_throughput";
  r.value = 1234.5;
  r.unit = "samples/s";
  r.note = "steps=5";
  std::ostringstream os;
  write_reference_csv(os, {r});
  auto back = parse_reference_csv(os.str(), "rt.csv");
  REQUIRE(back.size() == 1);
  CHECK(back[0].source == r.source);
  CHECK(back[0].num_devices == 2);
  CHECK(back[0].value == Approx(1234.5));
  CHECK(back[0].note == "steps=5");
}

TEST_CASE("metrics: names, accuracy targets and unknown metrics", "[validation][metrics]") {
  CHECK(parse_metric("train_throughput")->kind == MetricKind::train_throughput);
  CHECK(parse_metric("oom")->kind == MetricKind::oom);
  auto m = parse_metric("cost_to_top1_0.757");
  REQUIRE(m);
  CHECK(m->kind == MetricKind::cost_to_top1);
  CHECK(*m->target == Approx(0.757));
  CHECK(parse_metric("hours_to_top5_0.93")->kind == MetricKind::hours_to_top5);
  CHECK_FALSE(parse_metric("bogus"));
  CHECK_FALSE(parse_metric("epochs_to_top1_"));
  CHECK_FALSE(parse_metric("epochs_to_top1_1.5"));  // accuracy above 100%
  CHECK_FALSE(parse_metric("epochs_to_top1_abc"));
  CHECK(is_top5(parse_metric("minutes_to_top5_0.9")->kind));
  CHECK_FALSE(is_top5(parse_metric("cost_to_top1_0.9")->kind));
}

TEST_CASE("error arithmetic: sign and MAPE", "[validation][metrics]") {
  CHECK(error_pct(110, 100) == Approx(10));   // over-prediction is positive
  CHECK(error_pct(90, 100) == Approx(-10));
  CHECK(error_pct(50, 200) == Approx(-75));
  CHECK(*mape_pct({10, -10, 40}) == Approx(20));
  CHECK(*mape_pct({-5}) == Approx(5));
  CHECK_FALSE(mape_pct({}).has_value());
}

TEST_CASE("csv: the optional columns parse, round-trip and check their values (issue 29)", "[validation][csv]") {
  const std::string head = kHeader.substr(0, kHeader.size() - 1) + ",seq_len,global_batch,tp,pp,sharding,sequence_parallel\n";
  const std::string row = "s,v100_sxm2_16gb,8,dgx1v_nvlink,pytorch,bert_large,,4,mixed_fp16,real,train_throughput,100,sequences/s,n";
  auto rows = parse_reference_csv(head + row + ",384,256,2,1,zero1,true\n", "ref.csv");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].seq_len == 384);
  CHECK(rows[0].global_batch == 256);
  CHECK(rows[0].tp == 2);
  CHECK(rows[0].pp == 1);
  CHECK_FALSE(rows[0].cp);
  CHECK(rows[0].sharding == "zero1");
  CHECK(rows[0].sequence_parallel == true);
  // Empty = not applicable.
  rows = parse_reference_csv(head + row + ",,,,,,\n", "ref.csv");
  CHECK_FALSE(rows[0].seq_len);
  CHECK_FALSE(rows[0].has_optional());
  // Bad values name the line and the column.
  CHECK(error_of(head + row + ",0,,,,,\n").find("ref.csv:2: seq_len: must be > 0") != std::string::npos);
  CHECK(error_of(head + row + ",128,,,,zero4,\n").find("ref.csv:2: sharding: unknown value 'zero4'") != std::string::npos);
  CHECK(error_of(head + row + ",128,,,,,yes\n").find("ref.csv:2: sequence_parallel: unknown value 'yes'") != std::string::npos);
  // The writer emits the optional columns when a row sets one, and they read back the same.
  rows = parse_reference_csv(head + row + ",384,256,2,1,zero1,true\n", "ref.csv");
  std::ostringstream os;
  write_reference_csv(os, rows);
  auto back = parse_reference_csv(os.str(), "back.csv");
  REQUIRE(back.size() == 1);
  CHECK(back[0].seq_len == 384);
  CHECK(back[0].sharding == "zero1");
  CHECK(back[0].sequence_parallel == true);
}

TEST_CASE("csv: a row's stack version is its framework_version column, else the note's phrase", "[validation][csv]") {
  const std::string row = "s,v100_sxm2_16gb,1,dgx1v_nvlink,pytorch,resnet50,imagenet,256,mixed_fp16,real,train_throughput,1,images/s,";
  // The shared CSVs end their notes with "framework version X" (quoted when the note has commas).
  auto rows = parse_reference_csv(kHeader + row + "\"ResNet-50 v1.5, DGX-1; framework version pytorch-ngc19.07\"\n", "ref.csv");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].framework_version.empty());
  CHECK(rows[0].stack_version() == "pytorch-ngc19.07");
  CHECK_FALSE(rows[0].has_optional());
  rows = parse_reference_csv(kHeader + row + "framework version tensorflow-ngc20.06-tf1; XLA enabled\n", "ref.csv");
  CHECK(rows[0].stack_version() == "tensorflow-ngc20.06-tf1");
  rows = parse_reference_csv(kHeader + row + "no version stated\n", "ref.csv");
  CHECK(rows[0].stack_version().empty());
  // No results container stated: the container the README requires is the version.
  rows = parse_reference_csv(kHeader + row + "\"DGX-2; README requires PyTorch 19.05-py3 NGC container or newer (results container not stated)\"\n", "ref.csv");
  CHECK(rows[0].stack_version() == "pytorch-ngc19.05");
  rows = parse_reference_csv(kHeader + row + "requires TensorFlow 20.06-tf1-py3 NGC container\n", "ref.csv");
  CHECK(rows[0].stack_version() == "tensorflow-ngc20.06-tf1");
  // A stated results container wins over the requirement; a "requires" without a tag is no version.
  rows = parse_reference_csv(kHeader + row + "\"requires PyTorch 19.05-py3 NGC container or newer; framework version pytorch-ngc19.10\"\n", "ref.csv");
  CHECK(rows[0].stack_version() == "pytorch-ngc19.10");
  rows = parse_reference_csv(kHeader + row + "requires PyTorch latest NGC container\n", "ref.csv");
  CHECK(rows[0].stack_version().empty());
  rows = parse_reference_csv(kHeader + row + "requires DALI\n", "ref.csv");
  CHECK(rows[0].stack_version().empty());
  // The column wins over the note, and round-trips through the writer.
  const std::string head = kHeader.substr(0, kHeader.size() - 1) + ",framework_version\n";
  rows = parse_reference_csv(head + row + "framework version pytorch-ngc19.07,pytorch-ngc21.03\n", "ref.csv");
  CHECK(rows[0].stack_version() == "pytorch-ngc21.03");
  CHECK(rows[0].has_optional());
  std::ostringstream os;
  write_reference_csv(os, rows);
  CHECK(parse_reference_csv(os.str(), "back.csv")[0].framework_version == "pytorch-ngc21.03");
}

TEST_CASE("csv: a row's global batch is its column, else the accumulation its note states", "[validation][csv]") {
  // 8 GPUs at 16 sequences per micro-step; the note says 8192 per GPU and optimizer step over
  // 512 accumulation steps (8192 / 512 = 16, the row's batch): 8192 x 8 = 65536 per step.
  const std::string row = "s,v100_sxm2_16gb,8,dgx1v_nvlink,pytorch,bert_large,wikipedia+bookcorpus,16,mixed_fp16,real,train_throughput,1,sequences/s,";
  auto rows = parse_reference_csv(kHeader + row + "\"phase 1; micro-batch derived = 8192/512 (table lists batch/GPU \"\"8192\"\")\"\n", "ref.csv");
  REQUIRE(rows.size() == 1);
  CHECK_FALSE(rows[0].global_batch);
  CHECK(rows[0].step_global_batch() == 65536);
  CHECK_FALSE(rows[0].has_optional());  // nothing is written back: the note stays the source
  // A/B that is not the row's batch states nothing about this row.
  rows = parse_reference_csv(kHeader + row + "micro-batch derived = 8192/1024\n", "ref.csv");
  CHECK_FALSE(rows[0].step_global_batch());
  rows = parse_reference_csv(kHeader + row + "micro-batch derived = 8192/\n", "ref.csv");
  CHECK_FALSE(rows[0].step_global_batch());
  rows = parse_reference_csv(kHeader + row + "no accumulation stated\n", "ref.csv");
  CHECK_FALSE(rows[0].step_global_batch());
  // The column wins over the note.
  const std::string head = kHeader.substr(0, kHeader.size() - 1) + ",global_batch\n";
  rows = parse_reference_csv(head + row + "micro-batch derived = 8192/512,256\n", "ref.csv");
  CHECK(rows[0].step_global_batch() == 256);
}
