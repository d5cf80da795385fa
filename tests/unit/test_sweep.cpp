// Sweep library: YAML checks (file:line: key: message before anything runs), grid / random /
// Latin-hypercube determinism and balance, the Pareto front on a hand-made set, and the
// row format read back exactly.
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "common/config_paths.hpp"
#include "common/error.hpp"
#include "sweep/points.hpp"
#include "sweep/results.hpp"
#include "sweep/runner.hpp"
#include "sweep/sweep_spec.hpp"

using namespace xpusim;
using namespace xpusim::sweep;
using Catch::Contains;
using Catch::StartsWith;

namespace {

std::string write_yaml(const std::string& name, const std::string& text) {
  auto dir = std::filesystem::temp_directory_path() / "xpusim_test_sweep";
  std::filesystem::create_directories(dir);
  std::string path = (dir / (name + ".yaml")).string();
  std::ofstream(path) << text;
  return path;
}

std::string load_error(const std::string& name, const std::string& text) {
  std::string path = write_yaml(name, text);
  try {
    load_sweep(path);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

const char* kBase =
    "fixed: {device: v100_sxm2_16gb, model: alexnet, precision: fp32}\n"
    "axes:\n"
    "  count: [1, 2, 4]\n"
    "  batch: [32, 64]\n";

}  // namespace

TEST_CASE("sweep: a valid sweep loads; columns are fixed then axis fields", "[sweep]") {
  SweepSpec s = load_sweep(write_yaml("ok", kBase));
  REQUIRE(s.axes.size() == 2);
  CHECK(s.grid_size() == 6);
  CHECK(s.columns == std::vector<std::string>{"device", "model", "precision", "count", "batch"});
  CHECK(s.objectives.size() == 1);
  CHECK(s.objectives[0].field == "throughput_samples_per_s");
  CHECK(s.objectives[0].maximize);
}

TEST_CASE("sweep: YAML errors name file:line and key", "[sweep]") {
  std::string e = load_error("unknown_axis", std::string(kBase) + "  batchsize: [1]\n");
  CHECK_THAT(e, StartsWith(write_yaml("unknown_axis", std::string(kBase) + "  batchsize: [1]\n") + ":5:"));
  CHECK_THAT(e, Contains("axes.batchsize: unknown axis key 'batchsize'"));

  e = load_error("empty_axis", std::string(kBase) + "  precision: []\n");
  CHECK_THAT(e, Contains(":5:"));
  CHECK_THAT(e, Contains("axes.precision: empty axis"));

  e = load_error("bad_constraint", std::string(kBase) + "constraints:\n  max: {dollars: 3}\n");
  CHECK_THAT(e, Contains(":6:"));
  CHECK_THAT(e, Contains("constraints.max.dollars: unknown result field 'dollars'"));

  e = load_error("bad_objective", std::string(kBase) + "objectives: [speed]\n");
  CHECK_THAT(e, Contains("objectives.speed: unknown result field"));

  // A device YAML key is checked by the device's own reader, before any point runs.
  e = load_error("bad_set", "fixed: {device: tpu_v2, model: alexnet, count: 8, batch: 32, precision: bf16}\n"
                            "axes:\n  set.mxu_rows: [128, 0]\n");
  CHECK_THAT(e, Contains(":3:"));
  CHECK_THAT(e, Contains("axes.set.mxu_rows: set.mxu_rows=0"));
  CHECK_THAT(e, Contains("must be in [2, 4096]"));

  // (model is not in fixed: here: a field set twice is its own error, tested in test_reliability_round2.cpp)
  e = load_error("bad_value", "fixed: {device: v100_sxm2_16gb, precision: fp32}\naxes:\n  batch: [32]\n"
                              "  model: [alexnet, not_a_model]\n");
  CHECK_THAT(e, Contains("axes.model: model=not_a_model"));

  // A TPU key crossed with a GPU device: caught on the combination, not at point N.
  e = load_error("cross", "fixed: {model: alexnet, batch: 32, precision: fp32}\n"
                          "axes:\n  device: [v100_sxm2_16gb, tpu_v2]\n  set.mxu_rows: [64]\n");
  CHECK_THAT(e, Contains("cross.yaml:4") && Contains("set.mxu_rows") && Contains("mxu_rows: unknown key"));

  // A count the device's system cannot hold: the engine's placement check, before any point.
  e = load_error("count", "fixed: {model: alexnet, batch: 32}\naxes:\n  hw:\n    - {device: v100_sxm2_16gb, count: 8}\n");
  CHECK_THAT(e, Contains(":4: axes.hw: device=v100_sxm2_16gb, count=8: count: system 'aws_p3_8xlarge' holds at most 4"));

  // A V100 billed as a Cloud TPU.
  e = load_error("offer", std::string(kBase) + "  offer: [gcp_2018/cloud_tpu_v2-8]\n");
  CHECK_THAT(e, Contains("axes.offer: offer=gcp_2018/cloud_tpu_v2-8: offer: offer 'gcp_2018/cloud_tpu_v2-8' holds tpu_v2, not v100_sxm2_16gb"));

  e = load_error("no_samples", std::string("sampling: lhs\n") + kBase);
  CHECK_THAT(e, Contains("samples: random and lhs sampling need samples > 0"));
}

TEST_CASE("sweep: grid order, last axis fastest", "[sweep]") {
  SweepSpec s = load_sweep(write_yaml("grid", kBase));
  auto p = make_points(s);
  REQUIRE(p.size() == 6);
  CHECK(p[0].choice == std::vector<size_t>{0, 0});
  CHECK(p[1].choice == std::vector<size_t>{0, 1});
  CHECK(p[2].choice == std::vector<size_t>{1, 0});
  CHECK(p[5].choice == std::vector<size_t>{2, 1});
}

TEST_CASE("sweep: random and LHS points depend only on the seed; LHS is balanced", "[sweep]") {
  std::string axes = "fixed: {device: v100_sxm2_16gb, model: alexnet, precision: fp32}\n"
                     "axes:\n  count: [1, 2, 3, 4]\n  batch: {from: 8, to: 512, count: 7, scale: log}\n";
  for (std::string sampling : {"random", "lhs"}) {
    SweepSpec a = load_sweep(write_yaml("s1", "sampling: " + sampling + "\nsamples: 100\nseed: 7\n" + axes));
    SweepSpec b = load_sweep(write_yaml("s2", "sampling: " + sampling + "\nsamples: 100\nseed: 7\n" + axes));
    SweepSpec c = load_sweep(write_yaml("s3", "sampling: " + sampling + "\nsamples: 100\nseed: 8\n" + axes));
    auto pa = make_points(a), pb = make_points(b), pc = make_points(c);
    REQUIRE(pa.size() == 100);
    bool same = true, differs = false;
    for (size_t i = 0; i < pa.size(); ++i) {
      same = same && pa[i].choice == pb[i].choice;
      differs = differs || pa[i].choice != pc[i].choice;
    }
    CHECK(same);
    CHECK(differs);
    if (sampling == "lhs") {
      // 100 points over 4 and 7 values: each value 25 times, and 14 or 15 times.
      std::map<size_t, int> n0, n1;
      for (const auto& p : pa) {
        ++n0[p.choice[0]];
        ++n1[p.choice[1]];
      }
      for (auto [v, n] : n0) CHECK(n == 25);
      REQUIRE(n1.size() == 7);
      for (auto [v, n] : n1) CHECK((n == 14 || n == 15));
    }
  }
  // The log range 8..512 in 7 steps is 8, 16, ..., 512 (integers for batch).
  SweepSpec s = load_sweep(write_yaml("s4", "sampling: random\nsamples: 3\n" + axes));
  std::vector<std::string> batches;
  for (const auto& v : s.axes[1].values) batches.push_back(v[0].second);
  CHECK(batches == std::vector<std::string>{"8", "16", "32", "64", "128", "256", "512"});
}

TEST_CASE("sweep: splitmix64 reference values", "[sweep]") {
  // First outputs for seed 0 (the generator's published reference sequence).
  SplitMix64 r(0);
  CHECK(r.next() == 0xE220A8397B1DCDAFULL);
  CHECK(r.next() == 0x6E789E6AA1B965F4ULL);
}

TEST_CASE("sweep: Pareto front of a hand-made set", "[sweep]") {
  // Minimise time, maximise throughput. Points (time, throughput):
  // 0 (1, 10) front; 1 (2, 20) front; 2 (2, 15) dominated by 1; 3 (3, 20) dominated by 1;
  // 4 (0.5, 5) front; 5 (1, 10) equal to 0: not dominated (no strictly better) -> front;
  // 6 status infeasible; 7 lacks throughput.
  std::vector<std::pair<double, double>> v = {{1, 10}, {2, 20}, {2, 15}, {3, 20}, {0.5, 5}, {1, 10}, {0.1, 100}, {0.1, 0}};
  std::vector<PointResult> rows;
  for (size_t i = 0; i < v.size(); ++i) {
    PointResult r;
    r.point = long(i);
    r.status = i == 6 ? "infeasible" : "ok";
    r.values["step_time_s"] = v[i].first;
    if (i != 7) r.values["throughput_samples_per_s"] = v[i].second;
    rows.push_back(r);
  }
  std::vector<Objective> objs = {{"step_time_s", false}, {"throughput_samples_per_s", true}};
  CHECK(pareto_front(rows, objs) == std::vector<size_t>{0, 1, 4, 5});
  // One objective: the best (ties all stay).
  CHECK(pareto_front(rows, {{"step_time_s", false}}) == std::vector<size_t>{7});
  CHECK(pareto_front(rows, {{"throughput_samples_per_s", true}}) == std::vector<size_t>{1, 3});
}

TEST_CASE("sweep: every sweep shipped in configs/sweeps/ loads and passes its checks", "[sweep]") {
  // load_sweep checks every axis value and every placement combination before any point runs,
  // so a device, offer or framework renamed elsewhere breaks this test, not a user's run.
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(config_dir()) / "sweeps")) {
    if (e.path().extension() != ".yaml") continue;
    INFO(e.path().string());
    SweepSpec s = load_sweep(e.path().string());
    CHECK(s.grid_size() > 0);
    ++n;
  }
  CHECK(n >= 5);
}

TEST_CASE("sweep: rows read back as written (CSV and JSONL)", "[sweep]") {
  SweepSpec s = load_sweep(write_yaml("rows", kBase));
  PointResult r;
  r.point = 4;
  r.request = {"v100_sxm2_16gb", "alexnet", "fp32", "4", "32"};
  r.status = "infeasible";
  r.engine = "analytical";
  r.values["step_time_s"] = 0.123456789012;
  r.values["memory_bytes"] = 17179869184.0;
  r.fits_in_memory = false;
  r.note = "a, \"quoted\"\nnote";
  for (auto f : {RowFormat::csv, RowFormat::jsonl}) {
    std::string line = format_row(s, r, f);
    CHECK(line.find('\n') == std::string::npos);
    PointResult b = parse_row(s, line, f, "x:1");
    CHECK(b.point == 4);
    CHECK(b.request == r.request);
    CHECK(b.status == "infeasible");
    CHECK(b.values.at("memory_bytes") == 17179869184.0);
    CHECK(b.values.at("step_time_s") == 0.123456789012);  // full precision, as every CSV
    CHECK(b.values.count("throughput_samples_per_s") == 0);
    CHECK(b.fits_in_memory == std::optional<bool>(false));
    CHECK(b.note == "a, \"quoted\" note");
    CHECK(format_row(s, b, f) == line);
  }
  CHECK_THROWS_AS(parse_row(s, "1,2,3", RowFormat::csv, "x:2"), UserError);
  // A point index out of range or fractional is a row error in both formats (the JSONL one
  // was undefined behaviour: a fuzzer's 4.4e78 converted to long long).
  std::string json = format_row(s, r, RowFormat::jsonl);
  for (const char* bad : {"4.44444e+78", "-1", "2.5", "\"4\""}) {
    std::string line = json;
    line.replace(line.find("\"point\":4"), std::string("\"point\":4").size(), std::string("\"point\":") + bad);
    CHECK_THROWS_WITH(parse_row(s, line, RowFormat::jsonl, "x:3"), Catch::Contains("x:3: point:") &&
                                                                       Catch::Contains("is not a point index"));
  }
  std::string csv = format_row(s, r, RowFormat::csv);
  CHECK_THROWS_WITH(parse_row(s, "4e78" + csv.substr(1), RowFormat::csv, "x:4"),
                    Catch::Contains("x:4: point: '4e78' is not a point index"));
}

TEST_CASE("sweep: JSONL rows are typed, error and note apart (issue 36)", "[sweep]") {
  SweepSpec s = load_sweep(write_yaml("typed", kBase));
  PointResult r;
  r.point = 1;
  r.request = {"v100_sxm2_16gb", "alexnet", "fp32", "4", "32"};
  r.status = "error";
  r.error = "count: too many";
  const nlohmann::json j = nlohmann::json::parse(format_row(s, r, RowFormat::jsonl));
  CHECK(j.at("count").is_number_integer());
  CHECK(j.at("count").get<int>() == 4);
  CHECK(j.at("batch").get<int>() == 32);
  CHECK(j.at("device") == "v100_sxm2_16gb");
  CHECK(j.at("engine").is_null());  // empty: null, not ""
  CHECK(j.at("note").is_null());
  CHECK(j.at("error") == "count: too many");
  CHECK(j.at("power_w").is_null());
  CHECK(j.at("power_source").is_null());
  CHECK_FALSE(j.contains("modelled_power_w"));
  for (auto f : {RowFormat::csv, RowFormat::jsonl}) {
    PointResult b = parse_row(s, format_row(s, r, f), f, "x:1");
    CHECK(b.request == r.request);
    CHECK(b.error == r.error);
    CHECK(b.note.empty());
  }
  // Number texts are compared and written in one form: "0.10" and "1e3" are 0.1 and 1000.
  CHECK(canonical_value("0.10") == "0.1");
  CHECK(canonical_value("1e3") == "1000");
  CHECK(canonical_value("64") == "64");
  CHECK(canonical_value("fp32") == "fp32");
  CHECK(canonical_value("007") == "007");  // not a JSON number: text
}

namespace {
std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("sweep: a stop keeps the finished rows in order and resume completes them", "[sweep][resume]") {
  SweepSpec s = load_sweep(write_yaml("stop", kBase));  // 6 analytical points
  auto dir = std::filesystem::temp_directory_path() / "xpusim_test_sweep";
  const std::string full = (dir / "stop_full.csv").string(), part = (dir / "stop_part.csv").string();
  RunOptions o;
  o.output = full;
  RunStats st = run_sweep(s, o);
  CHECK_FALSE(st.interrupted);
  CHECK(st.written == 6);

  for (int jobs : {1, 2}) {
    // Stop after the 2nd row written: serially exactly 2 rows; with workers at least 2 (the
    // points they were evaluating are finished), always a prefix of the full file.
    std::atomic<bool> stop{false};
    int rows = 0;
    o.output = part;
    o.jobs = jobs;
    o.resume = false;
    o.stop = &stop;
    o.on_row = [&] {
      if (++rows == 2) stop = true;
    };
    st = run_sweep(s, o);
    if (jobs == 1) {
      CHECK(st.interrupted);
      CHECK(st.written == 2);
    } else {
      // These points take milliseconds: the workers may have sent every row before the
      // stop reached them, and then the run is complete, not interrupted.
      CHECK(st.written >= 2);
      CHECK(st.interrupted == (st.written < 6));
    }
    CHECK(read_rows(s, part, RowFormat::csv).size() == static_cast<size_t>(st.written));
    const std::string have = slurp(part), want = slurp(full);
    CHECK(want.compare(0, have.size(), have) == 0);
    // Resumed without a stop: the same bytes as the uninterrupted run.
    stop = false;
    o.on_row = nullptr;
    o.resume = true;
    const long long kept = st.written;
    st = run_sweep(s, o);
    CHECK_FALSE(st.interrupted);
    CHECK(st.resumed == kept);
    CHECK(st.written == 6 - kept);
    CHECK(slurp(part) == want);
  }
  // A stop before the first point: nothing run, the header only, interrupted.
  std::atomic<bool> stop{true};
  o.jobs = 1;
  o.resume = false;
  o.stop = &stop;
  st = run_sweep(s, o);
  CHECK(st.interrupted);
  CHECK(st.written == 0);
  CHECK(read_rows(s, part, RowFormat::csv).empty());
}

TEST_CASE("sweep: worker shares do not follow the fastest axis", "[sweep]") {
  // 4 batch sizes on the last (fastest) axis, few graphs: points are dealt one by one. Dealt by
  // index, worker 0 of 2 got every batch 16 and 64 point and worker 1 every 32 and 128 (a TPU
  // step at 128 costs ~4x one at 16): 1.6x instead of ~2x. Each share must hold an even part
  // of every batch.
  SweepSpec s = load_sweep(write_yaml("shares",
                                      "fixed: {device: v100_sxm2_16gb, model: alexnet, precision: fp32}\n"
                                      "axes:\n"
                                      "  set.memory_bandwidth_gbps: {from: 500, to: 1500, count: 40}\n"
                                      "  batch: [16, 32, 64, 128]\n"));
  const auto todo = make_points(s);
  REQUIRE(todo.size() == 160);
  for (int n : {2, 3}) {
    const std::vector<int> who = assign_workers(s, todo, n);
    CHECK(who == assign_workers(s, todo, n));  // deterministic
    std::map<std::pair<int, size_t>, int> per;  // (worker, batch index) -> points
    std::map<int, int> total;
    for (size_t i = 0; i < todo.size(); ++i) {
      ++per[{who[i], todo[i].choice[1]}];
      ++total[who[i]];
    }
    for (int w = 0; w < n; ++w) {
      CHECK(std::abs(total[w] - 160 / n) <= 1);  // equal counts
      for (size_t b = 0; b < 4; ++b) {
        INFO("workers " << n << ", worker " << w << ", batch index " << b);
        // 40 points per batch: each worker gets its fair share (stratified: within one point).
        CHECK(std::abs(per[{w, b}] - 40.0 / n) <= 1);
      }
    }
  }
}
