// Studies: loading, sweep expansion, bad input with file:line, and a compare run whose
// throughput comes from a fake engine (the real engines are not needed here).
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.hpp"
#include "compare/compare.hpp"
#include "compare/compare_summary.hpp"
#include "models/zoo.hpp"
#include "validation/reference_csv.hpp"
#include "validation/validate.hpp"
#include "xpusim_test_paths.hpp"

using namespace xpusim;
using namespace xpusim::cost;

namespace {
std::string data(const std::string& f) { return std::string(XPUSIM_TEST_DATA_DIR) + "/costmodel/" + f; }

std::string write_study(const std::string& name, const std::string& text) {
  std::string path = "/tmp/xpusim_test_study_" + name + ".yaml";
  std::ofstream(path) << text;
  return path;
}

std::string load_error(const std::string& path) {
  try {
    load_study(path);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

const std::string kTarget =
    "targets:\n  - {model: resnet50, dataset: imagenet, accuracy: 0.757}\n";
const std::string kOption =
    "  - {label: a, device: tpu_v2, count: 8, precision: bf16, batch: 128, offer: gcp_2018/cloud_tpu_v2-8,\n"
    "     throughput: 1000, throughput_source: test}\n";
}  // namespace

TEST_CASE("a sweep expands batch x overrides into options", "[costmodel][study]") {
  Study s = load_study(data("sweep_study.yaml"));
  REQUIRE(s.options.size() == 5);
  CHECK(s.options[1].label == "tpu/global_batch=1024(8x128)/mxu_mhz=700");
  CHECK(s.options[4].label == "tpu/global_batch=4096(8x512)/mxu_mhz=940");
  CHECK(s.options[4].batch_per_device == 512);
  REQUIRE(s.options[4].placement.overrides.size() == 1);
  CHECK(s.options[4].placement.overrides[0] == "mxu_mhz=940");
  CHECK(s.options[2].source == ThroughputSource::predict);  // from defaults
}

TEST_CASE("compare: fake engine throughputs, failures stay on their row", "[costmodel][study]") {
  Study s = load_study(data("sweep_study.yaml"));
  int calls = 0;
  ThroughputFn fake = [&](const PredictRequest& r) {
    ++calls;
    // The overrides reach the engine; pretend 940 MHz does not exist.
    for (const auto& o : r.placement.overrides)
      if (o == "mxu_mhz=940") throw UnavailableError("fake engine: no such clock");
    StepReport rep;
    rep.global_batch = r.batch_per_device * r.placement.count;
    rep.throughput_samples_per_s = 100.0 * double(r.batch_per_device);  // 12800 or 51200
    return rep;
  };
  CompareResult r = run_study(s, fake);
  REQUIRE(r.rows.size() == 5);
  CHECK(calls == 4);
  const CompareRow& given = r.rows[0];
  CHECK(*given.throughput_samples_per_s == 2000);
  CHECK(given.throughput_source == "given");
  // 64 epochs x 1281167 / 2000 samples/s.
  CHECK(*given.hours_to_target == Approx(64 * 1281167.0 / 2000 / 3600));
  const CompareRow& b128 = r.rows[1];
  CHECK(*b128.throughput_samples_per_s == 12800);
  CHECK(*b128.epochs_to_target == Approx(64));                     // the curve's own batch (1024)
  const CompareRow& b512 = r.rows[3];
  CHECK(b512.global_batch == 4096);
  // McCandlish: 64 x (1 + 4096/20000) / (1 + 1024/20000) epochs, but 4x the throughput.
  CHECK(*b512.epochs_to_target == Approx(64 * (1 + 4096 / 20000.0) / (1 + 1024 / 20000.0)));
  CHECK(*b512.hours_to_target < *b128.hours_to_target);
  // The failed prediction is reported on its row; its neighbours computed.
  const CompareRow& bad = r.rows[4];
  CHECK_FALSE(bad.throughput_samples_per_s.has_value());
  CHECK(bad.error.find("prediction failed: fake engine: no such clock") != std::string::npos);
  CHECK(bad.price_usd_per_h.has_value());
  // JSON carries the stable field names and nulls for what is unknown.
  auto j = r.to_json();
  CHECK(j["rows"][4]["throughput_samples_per_s"].is_null());
  CHECK(j["rows"][0]["cost_to_target_usd"].get<double>() > 0);
  CHECK(j["rows"][0].contains("energy_kwh"));
  // The chart names every row.
  std::string svg = compare_chart_svg(r);
  CHECK(svg.find("<svg") == 0);
  CHECK(svg.find("tpu/global_batch=4096(8x512)/mxu_mhz=940") != std::string::npos);
}

TEST_CASE("a missing engine fails on the row, not the study", "[costmodel][study]") {
  // predict() with an engine that is not registered throws, as it does for tpu_systemc in a
  // build without that engine; the rows say why and the given-throughput row still computes.
  Study s = load_study(data("sweep_study.yaml"));
  CompareResult r = run_study(s, [](const PredictRequest& req) {
    PredictRequest q = req;
    q.engine = "no_such_engine";
    return predict(q);
  });
  REQUIRE(r.rows.size() == 5);
  CHECK(r.rows[0].cost_to_target_usd.has_value());
  for (size_t i = 1; i < r.rows.size(); ++i) {
    CHECK_FALSE(r.rows[i].throughput_samples_per_s.has_value());
    CHECK(r.rows[i].error.find("prediction failed: unknown engine 'no_such_engine'") == 0);
  }
}

TEST_CASE("bad studies fail with file:line: key", "[costmodel][study]") {
  std::string e = load_error(write_study("dev", kTarget + "options:\n" +
      "  - {label: a, device: tpu_v9, offer: gcp_2018/cloud_tpu_v2-8, batch: 1, throughput: predict}\n"));
  CHECK(e.find("xpusim_test_study_dev.yaml:4: options.device: unknown device 'tpu_v9'") != std::string::npos);

  e = load_error(write_study("offer", kTarget + "options:\n" +
      "  - {label: a, device: tpu_v2, offer: gcp_2018/nope, batch: 1, throughput: predict}\n"));
  CHECK(e.find(":4: options.offer: unknown price offer 'gcp_2018/nope'") != std::string::npos);

  e = load_error(write_study("tier", kTarget + "options:\n" +
      "  - {label: a, device: v100_sxm2_16gb, offer: aws_2018/p3.8xlarge, pricing: reserved_3y, batch: 1,\n"
      "     throughput: predict}\n"));
  CHECK(e.find("options.pricing: offer 'aws_2018/p3.8xlarge' has no reserved_3y price (it has: on_demand, reserved_1y)") !=
        std::string::npos);

  e = load_error(write_study("model", "targets:\n  - {model: resnet5000, dataset: imagenet, epochs: 1}\noptions:\n" + kOption));
  CHECK(e.find(":2: targets.model: unknown model 'resnet5000'") != std::string::npos);

  e = load_error(write_study("acc", "targets:\n  - {model: resnet50, dataset: imagenet,\n     accuracy: 0.80}\noptions:\n" + kOption));
  CHECK(e.find(":3: targets.accuracy: target 0.8 is never reached") != std::string::npos);
  CHECK(e.find("best accuracy known is 0.764") != std::string::npos);

  e = load_error(write_study("pct", "targets:\n  - {model: resnet50, dataset: imagenet, accuracy: 75.7}\noptions:\n" + kOption));
  CHECK(e.find("targets.accuracy: is a fraction") != std::string::npos);

  e = load_error(write_study("wrongdev", kTarget + "options:\n" +
      "  - {label: a, device: v100_sxm2_16gb, offer: gcp_2018/cloud_tpu_v2-8, batch: 1, throughput: predict}\n"));
  CHECK(e.find("options.offer: offer 'gcp_2018/cloud_tpu_v2-8' holds tpu_v2, not v100_sxm2_16gb") != std::string::npos);

  e = load_error(write_study("src", kTarget + "options:\n" +
      "  - {label: a, device: tpu_v2, offer: gcp_2018/cloud_tpu_v2-8, batch: 1, throughput: 12}\n"));
  CHECK(e.find("options.throughput_source: a given throughput needs its source") != std::string::npos);

  e = load_error(write_study("typo", kTarget + "options:\n" +
      "  - {label: a, device: tpu_v2, offer: gcp_2018/cloud_tpu_v2-8, batch: 1, throughput: predict, bacth: 3}\n"));
  CHECK(e.find("options.bacth: unknown key") != std::string::npos);

  // An unknown framework is the file's error at its line (like an unknown device), not every row's.
  e = load_error(write_study("fw", kTarget + "options:\n" +
      "  - {label: a, device: tpu_v2, offer: gcp_2018/cloud_tpu_v2-8, batch: 1, throughput: predict,\n"
      "     framework: tensorflow-9}\n"));
  CHECK(e.find(":5: options.framework: no profile named 'tensorflow-9' (names a CSV or option may use: ") !=
        std::string::npos);

  e = load_error(write_study("dup", kTarget + "options:\n" + kOption + kOption));
  CHECK(e.find("duplicate option label 'a'") != std::string::npos);
}

TEST_CASE("owned hardware: amortised cost, energy and break-even against renting", "[costmodel][study]") {
  Study s = load_study(data("buy_vs_rent.yaml"));
  CompareResult r = run_study(s);
  REQUIRE(r.rows.size() == 2);
  const CompareRow& own = r.rows[0];
  const CompareRow& rent = r.rows[1];
  // Batch 128 against the curve's 1024 with B_noise 20000 (McCandlish et al. 2018).
  double epochs = 84 * (1 + 128 / 20000.0) / (1 + 1024 / 20000.0);
  CHECK(*own.epochs_to_target == Approx(epochs));
  double own_s = epochs * 1281167 / 400, rent_s = epochs * 1281167 / 800;
  CHECK(*own.hours_to_target == Approx(own_s / 3600));
  // Owned: $2499 over 3 years of 8766 h, + 280 W at $0.13/kWh; billed per second.
  double own_rate = 2499 / (3 * 8766.0) + 0.28 * 0.13;
  CHECK(*own.price_usd_per_h == Approx(own_rate));
  CHECK(*own.cost_to_target_usd == Approx(own_rate * own_s / 3600).epsilon(1e-4));
  CHECK(*own.energy_kwh == Approx(0.28 * own_s / 3600));
  CHECK(*rent.cost_to_target_usd == Approx(3.06 * rent_s / 3600).epsilon(1e-4));
  // Buying pays off after purchase / (rented $ per run - owned electricity per run) runs.
  double runs = 2499 / (3.06 * rent_s / 3600 - 0.28 * own_s / 3600 * 0.13);
  CHECK(*own.breakeven_runs == Approx(runs).epsilon(1e-4));
  CHECK_FALSE(rent.breakeven_runs.has_value());
}

TEST_CASE("price catalog errors carry file:line", "[costmodel]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "xpusim_test_pricing";
  fs::create_directories(dir);
  std::ofstream(dir / "a.yaml") << "catalog: c\nprovider: p\ndate: 2020\nsource: s\noffers:\n"
                                   "  - {name: x, on_demand_usd_per_h: 1}\n"
                                   "  - {name: x, on_demand_usd_per_h: 2}\n";
  try {
    load_price_catalog(dir.string());
    FAIL("expected an error");
  } catch (const UserError& e) {
    CHECK(std::string(e.what()).find("a.yaml:7: name: duplicate offer id 'c/x'") != std::string::npos);
  }
  std::ofstream(dir / "a.yaml") << "catalog: c\nprovider: p\ndate: 2020\nsource: s\noffers:\n"
                                   "  - {name: x, on_demand_usd_per_h: -1}\n";
  try {
    load_price_catalog(dir.string());
    FAIL("expected an error");
  } catch (const UserError& e) {
    CHECK(std::string(e.what()).find("a.yaml:6: offers.on_demand_usd_per_h: must be >= 0") != std::string::npos);
  }
  fs::remove_all(dir);
}

TEST_CASE("compare: stopped after a row and resumed from its row file, rows identical", "[costmodel][study][resume]") {
  // The sweep study has 5 rows; the fake engine's throughputs have many digits (a row file
  // must carry them exactly) and the 940 MHz option fails (an error row is resumed too).
  Study s = load_study(data("sweep_study.yaml"));
  auto fake = [](const PredictRequest& r) {
    for (const auto& o : r.placement.overrides)
      if (o == "mxu_mhz=940") throw UnavailableError("fake engine: no such clock");
    StepReport rep;
    rep.global_batch = r.batch_per_device * r.placement.count;
    rep.throughput_samples_per_s = 1e5 / 3.0 + double(r.batch_per_device) / 7.0;
    return rep;
  };
  const std::string fp = compare_inputs_fingerprint(s);
  CHECK(fp.size() == 16);
  CompareResult full = run_study(s, fake);
  REQUIRE(full.rows.size() == 5);
  for (OutputFormat f : {OutputFormat::csv, OutputFormat::json}) {
    for (size_t stop_after = 0; stop_after <= 5; ++stop_after) {
      std::atomic<bool> stop{stop_after == 0};
      StudyRunControl c;
      c.stop = &stop;
      size_t seen = 0;
      c.on_row = [&](const CompareResult& partial) {
        CHECK(partial.rows.size() == ++seen);
        if (seen == stop_after) stop = true;
      };
      CompareResult part = run_study(s, fake, false, c);
      CHECK(part.interrupted == (stop_after < 5));
      CHECK(part.rows.size() == stop_after);
      // Through the file format and back.
      const std::string path = "/tmp/xpusim_test_compare_rows." + std::string(output_format_name(f));
      {
        std::ofstream os(path);
        write_compare_rows(os, part, f, fp, !part.interrupted);
      }
      CompareRowFile back = read_compare_rows(path, f);
      CHECK(back.inputs == fp);
      CHECK(back.complete == !part.interrupted);
      REQUIRE(back.rows.size() == stop_after);
      StudyRunControl resume;
      resume.done = back.rows;
      CompareResult done = run_study(s, fake, false, resume);
      CHECK(done.resumed_rows == stop_after);
      std::ostringstream a, b, fa, fb;
      print_compare(a, full, f);
      print_compare(b, done, f);
      CHECK(a.str() == b.str());
      write_compare_rows(fa, full, f, fp, true);
      write_compare_rows(fb, done, f, fp, true);
      CHECK(fa.str() == fb.str());
    }
  }
  // Rows of another study at a position are refused, naming the row.
  StudyRunControl wrong;
  wrong.done = {full.rows[1]};
  CHECK_THROWS_WITH(run_study(s, fake, false, wrong), Catch::Contains("row 1 of the earlier run is tpu/global_batch=1024(8x128)"));
  // A file that is not a row file names its line.
  const std::string bad = "/tmp/xpusim_test_compare_rows_bad.csv";
  std::ofstream(bad) << "option,target\n";
  CHECK_THROWS_WITH(read_compare_rows(bad, OutputFormat::csv), Catch::Contains(bad + ":1: not a compare row file"));
  // A row file of the version before the monitoring columns is named as such, in both formats.
  std::ofstream(bad) << "# xpusim compare rows v1 inputs=00 complete=false\noption,target\n";
  CHECK_THROWS_WITH(read_compare_rows(bad, OutputFormat::csv),
                    Catch::Contains(bad + ":1: a row file of an older xpusim (compare rows v1"));
  const std::string bad_json = "/tmp/xpusim_test_compare_rows_bad.json";
  std::ofstream(bad_json) << R"({"row_file": {"version": 1, "inputs": "00", "complete": false}, "rows": []})";
  CHECK_THROWS_WITH(read_compare_rows(bad_json, OutputFormat::json),
                    Catch::Contains(bad_json + ": a row file of an older xpusim (version 1"));
}

TEST_CASE("compare: tokens/s appears only on rows whose report has it", "[costmodel][study]") {
  Study s = load_study(data("sweep_study.yaml"));
  ThroughputFn fake = [&](const PredictRequest& r) {
    StepReport rep;
    rep.global_batch = r.batch_per_device * r.placement.count;
    rep.throughput_samples_per_s = 100.0 * double(r.batch_per_device);
    // A token-wise model of 128 tokens per sample at batch 128, none at the others.
    if (r.batch_per_device == 128) rep.throughput_tokens_per_s = rep.throughput_samples_per_s * 128;
    return rep;
  };
  CompareResult r = run_study(s, fake);
  REQUIRE(r.rows.size() == 5);
  REQUIRE(r.rows[1].throughput_tokens_per_s.has_value());
  CHECK(*r.rows[1].throughput_tokens_per_s == Approx(12800.0 * 128));
  CHECK(r.rows[1].to_json()["throughput_tokens_per_s"].get<double>() == Approx(12800.0 * 128));
  CHECK_FALSE(r.rows[0].throughput_tokens_per_s.has_value());  // a given throughput
  CHECK_FALSE(r.rows[0].to_json().contains("throughput_tokens_per_s"));
}

TEST_CASE("study: build, precision and data are typed once; an unknown build names the field", "[costmodel]") {
  const std::string head =
      "name: b\ntargets:\n  - {model: mnist_cnn, dataset: mnist, epochs: 1, batch_per_device: 128}\noptions:\n";
  const std::string opt = "  - {label: o, device: gce_skylake_vcpu, count: 8, offer: gcp_2017/n1-highcpu-8, "
                          "pricing: preemptible, ";
  std::string e = load_error(write_study("bad_build", head + opt + "build: nonsense}\n"));
  CHECK(e.find("xpusim_test_study_bad_build.yaml:5: options.build: unknown build 'nonsense'") != std::string::npos);
  Study s = load_study(write_study("typed", head + opt + "build: compiled, precision: mixed, data: synthetic, throughput: predict}\n"));
  REQUIRE(s.options.size() == 1);
  CHECK(s.options[0].placement.build == CpuBuild::compiled);
  CHECK(s.options[0].precision == Precision::mixed_fp16);  // the CSV spelling, read once
  CHECK(s.options[0].data == DataSource::synthetic);
  Study d = load_study(write_study("typed_default", head + opt + "throughput: predict}\n"));
  CHECK(!d.options[0].placement.build);  // none asked for: the device's default
  CHECK(d.options[0].data == DataSource::real);
}

namespace {
// Two options on different hardware; `billing` is the study's billing line (may be empty).
std::string two_option_study(const std::string& name, const std::string& billing, double epochs) {
  return write_study(name, "name: " + name + "\n" + billing +
                               "targets:\n  - {label: t, model: cnn10, dataset: cifar10, epochs: " + std::to_string(epochs) +
                               "}\n"
                               "defaults: {throughput: predict, data: real}\n"
                               "options:\n"
                               "  - {label: tpu, device: tpu_v2, count: 8, precision: bf16, batch: 16,"
                               " offer: gcp_2018/cloud_tpu_v2-8}\n"
                               "  - {label: gpus, device: v100_sxm2_16gb, count: 4, system: aws_p3_8xlarge,"
                               " precision: mixed_fp16, batch: 256, offer: aws_2018/p3.8xlarge}\n");
}
std::string summary_text(const CompareResult& r) {
  std::string out;
  for (const auto& l : conclusion_lines(r, conclude(r), false)) out += l + "\n";
  return out;
}
}  // namespace

TEST_CASE("compare: an option that does not fit is neither costed nor headlined (issue 31)", "[costmodel][study]") {
  Study s = load_study(two_option_study("oom", "", 100));
  // The V100 option is 10x faster but out of memory; the TPU one fits.
  ThroughputFn fake = [](const PredictRequest& r) {
    StepReport rep;
    rep.global_batch = r.batch_per_device * r.placement.count;
    const bool gpu = r.placement.device == "v100_sxm2_16gb";
    rep.throughput_samples_per_s = gpu ? 100000 : 10000;
    rep.fits_in_memory = !gpu;
    rep.memory_bytes = gpu ? 20000000000 : 1000000000;
    rep.memory_capacity_bytes = 16000000000;
    return rep;
  };
  CompareResult r = run_study(s, fake);
  REQUIRE(r.rows.size() == 2);
  const CompareRow& oom = r.rows[1];
  CHECK_FALSE(oom.throughput_samples_per_s.has_value());
  CHECK_FALSE(oom.hours_to_target.has_value());
  CHECK_FALSE(oom.cost_to_target_usd.has_value());
  CHECK_FALSE(oom.energy_kwh.has_value());
  // Not fitting is a result, not a failure: the row says so in `note`, `error` stays empty.
  CHECK_THAT(oom.note, Catch::Contains("does not fit in device memory (20.0 GB needed per device, 16.0 GB available)"));
  CHECK(oom.error.empty());
  CHECK(r.rows[0].cost_to_target_usd.has_value());
  auto cs = conclude(r);
  REQUIRE(cs.size() == 1);
  CHECK(cs[0].fastest.row == 0);
  CHECK(cs[0].cheapest.row == 0);
  CHECK(cs[0].fastest.runner_up == -1);   // the OOM option is no runner-up either
  CHECK(cs[0].cheapest.runner_up == -1);
  const std::string text = summary_text(r);
  CHECK_THAT(text, Catch::Contains("fastest:  tpu"));
  CHECK_THAT(text, !Catch::Contains("than gpus"));
  CHECK_THAT(text, Catch::Contains("not costed: 1 of 2 rows: does not fit in device memory"));
}

TEST_CASE("compare: rows carry the step's monitoring readings, none for a run that does not fit (issue 31)",
          "[costmodel][study]") {
  Study s = load_study(two_option_study("monitoring", "", 100));
  // The TPU option's engine reports no readings; the V100 one does, and in a second study the
  // same V100 option does not fit.
  auto fake_with = [](bool gpu_fits) {
    return ThroughputFn([gpu_fits](const PredictRequest& r) {
      StepReport rep;
      rep.global_batch = r.batch_per_device * r.placement.count;
      rep.throughput_samples_per_s = 10000;
      rep.memory_bytes = 1000000000;
      rep.memory_capacity_bytes = 16000000000;
      if (r.placement.device == "v100_sxm2_16gb") {
        rep.fits_in_memory = gpu_fits;
        rep.extra["gpu_util_pct_smi"] = 71.5;
        rep.extra["gpu_mem_used_bytes"] = 3e9;
        rep.extra["gpu_power_w"] = 240.0;
        rep.extra["cpu_util_pct"] = 12.5;
      }
      return rep;
    });
  };
  CompareResult r = run_study(s, fake_with(true));
  REQUIRE(r.rows.size() == 2);
  CHECK_FALSE(r.rows[0].gpu_util_pct_smi.has_value());
  CHECK_FALSE(r.rows[0].gpu_power_w.has_value());
  const CompareRow& gpu = r.rows[1];
  CHECK(gpu.gpu_util_pct_smi == 71.5);
  CHECK(gpu.gpu_mem_used_bytes == 3e9);
  CHECK(gpu.gpu_power_w == 240.0);
  CHECK(gpu.cpu_util_pct == 12.5);
  nlohmann::json j = gpu.to_json();
  CHECK(j["gpu_util_pct_smi"].get<double>() == 71.5);
  CHECK(r.rows[0].to_json()["gpu_power_w"].is_null());
  CompareResult oom = run_study(s, fake_with(false));
  CHECK_FALSE(oom.rows[1].gpu_util_pct_smi.has_value());
  CHECK_FALSE(oom.rows[1].gpu_mem_used_bytes.has_value());
  CHECK_FALSE(oom.rows[1].cpu_util_pct.has_value());
}

TEST_CASE("compare: billing offer vs prorated, and no finding within billing rounding (issue 31)",
          "[costmodel][study]") {
  ThroughputFn fake = [](const PredictRequest& r) {
    StepReport rep;
    rep.global_batch = r.batch_per_device * r.placement.count;
    rep.throughput_samples_per_s = r.placement.device == "v100_sxm2_16gb" ? 60000 : 50000;
    return rep;
  };
  // One epoch of CIFAR-10 (50,000 images): 1 s on the TPU, 0.83 s on the V100s.
  CompareResult offer = run_study(load_study(two_option_study("bill_offer", "", 1)), fake);
  CompareResult prorated = run_study(load_study(two_option_study("bill_prorated", "billing: prorated\n", 1)), fake);
  REQUIRE(offer.rows.size() == 2);
  // The offers bill a 60 s minimum; prorated bills the seconds used.
  CHECK(*offer.rows[0].billed_hours == Approx(60.0 / 3600));
  CHECK(*prorated.rows[0].billed_hours == Approx(1.0 / 3600));
  CHECK(*prorated.rows[0].cost_to_target_usd == Approx(*prorated.rows[0].hours_to_target * *prorated.rows[0].price_usd_per_h));
  // Under the offers' minimum the TPU looks 1.8x cheaper ($0.11 vs $0.20): the whole gap is
  // billing rounding, so the summary calls it a tie.
  CHECK(billing_rounding_usd(offer.rows[1]) == Approx((60.0 - 50000.0 / 60000) / 3600 * 12.24 + 0.005));
  CHECK_THAT(summary_text(offer), Catch::Contains("tied within billing rounding"));
  CHECK_THAT(summary_text(offer), !Catch::Contains("cheaper than"));
  CHECK_THAT(summary_text(offer), !Catch::Contains("won on"));  // a tie gives no reason for a winner
  // A gap past the rounding is a finding: 1000 epochs (1000 s vs 833 s, billed per second).
  CompareResult long_run = run_study(load_study(two_option_study("bill_long", "", 1000)), fake);
  CHECK_THAT(summary_text(long_run), Catch::Contains("cheaper than"));
  // The key takes only its two values.
  CHECK_THAT(load_error(two_option_study("bill_bad", "billing: monthly\n", 1)), Catch::Contains("billing"));
}

TEST_CASE("compare and validate predict the same cells of the shipped studies (issue 31)", "[costmodel][study]") {
  // Every CSV row that is a cell of a shipped study (same device, count, model, batch,
  // precision, data and framework profile) gets the same throughput from `compare` (the
  // study's option) and `validate` (the row's request): the studies name the framework their
  // source used, so the two commands cannot disagree on a shared cell.
  const auto rows = validation::read_reference_csv(std::string(XPUSIM_TEST_DATA_DIR) + "/reference/published_calibration.csv");
  int shared = 0;
  for (const char* name : {"cloud_cpu_vs_k80", "cifar10_2080ti_vs_tpu"}) {
    Study s = load_study(std::string(XPUSIM_DEFAULT_CONFIG_DIR) + "/studies/" + name + ".yaml");
    std::vector<PredictRequest> asked;
    ThroughputFn spy = [&](const PredictRequest& r) {
      asked.push_back(r);
      return predict(r);
    };
    CompareResult r = run_study(s, spy);
    for (const auto& row : rows) {
      for (const auto& q : asked) {
        if (q.placement.device != row.device || q.placement.count != row.num_devices.value_or(0) ||
            q.model != row.model || q.batch_per_device != row.batch_per_device.value_or(0) ||
            q.precision != row.precision || data_source_name(q.data) != row.data ||
            q.placement.framework != row.framework)  // the study names the CSV's stack (pip/compiled included)
          continue;
        PredictRequest v = validation::request_for_row(row);
        const double from_compare = predict(q).throughput_samples_per_s;
        const double from_validate = predict(v).throughput_samples_per_s;
        INFO(name << ": line " << row.line << " " << row.model << " x" << *row.num_devices << " batch "
                  << *row.batch_per_device);
        CHECK(from_compare == Approx(from_validate).epsilon(1e-9));
        ++shared;
        break;
      }
    }
  }
  // 16 cloud-CPU ratio rows (the K80 baseline rows are the study's k80 option) and 28 cnn10 rows:
  // a study that named another framework than its CSV rows would share none of them.
  CHECK(shared == 44);
}
