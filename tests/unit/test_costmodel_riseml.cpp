// The RiseML post (2018-04), redone from configs/studies/riseml_resnet50_published.yaml: its
// inputs (published throughputs, 2018 prices, epochs to accuracy) come from the study and the
// catalogs; the expected values below are the post's own figures, each within 3%.
#include <catch2/catch.hpp>

#include "compare/compare.hpp"
#include "models/zoo.hpp"

using namespace xpusim;
using namespace xpusim::cost;

namespace {
const CompareRow& row(const CompareResult& r, const std::string& option, const std::string& target) {
  for (const auto& x : r.rows)
    if (x.option == option && x.target == target) return x;
  FAIL("no row " << option << " / " << target);
  throw;
}
}  // namespace

TEST_CASE("riseml_resnet50_published reproduces the post within 3%", "[costmodel][riseml]") {
  Study s = load_study(config_dir() + "/studies/riseml_resnet50_published.yaml");
  CompareResult r = run_study(s);
  const double tol = 0.03;
  // Images/s per $/h (synthetic-data throughput, as the post computes it).
  CHECK(*row(r, "tpu_v2-8_synthetic", "top1_75.7").samples_per_s_per_usd_per_h == Approx(475).epsilon(tol));
  CHECK(*row(r, "p3.8xlarge_on_demand_synthetic", "top1_75.7").samples_per_s_per_usd_per_h == Approx(256).epsilon(tol));
  CHECK(*row(r, "p3.8xlarge_reserved_synthetic", "top1_75.7").samples_per_s_per_usd_per_h == Approx(375).epsilon(tol));
  // TPU to 75.7%: ~8.15 h and ~$55; to 76.4%: ~$73 (real ImageNet).
  const CompareRow& t1 = row(r, "tpu_v2-8_real", "top1_75.7");
  CHECK(*t1.epochs_to_target == Approx(64));
  CHECK(*t1.hours_to_target == Approx(8.15).epsilon(tol));
  CHECK(*t1.cost_to_target_usd == Approx(55).epsilon(tol));
  CHECK(*row(r, "tpu_v2-8_real", "top1_76.4").cost_to_target_usd == Approx(73).epsilon(tol));
  // The GPU curve never reaches 76.4%: reported on the row, with the best accuracy known.
  const CompareRow& g = row(r, "p3.8xlarge_on_demand_real", "top1_76.4");
  CHECK_FALSE(g.cost_to_target_usd.has_value());
  CHECK(g.note.find("best accuracy known is 0.757") != std::string::npos);  // a note, not a failure
  CHECK(g.error.empty());
  // Synthetic data trains nothing: no hours or dollars on those rows.
  CHECK_FALSE(row(r, "tpu_v2-8_synthetic", "top1_75.7").hours_to_target.has_value());
  // Energy: 8 TPUv2 cores at 140 W for the run.
  CHECK(*t1.energy_kwh == Approx(8 * 140 * *t1.hours_to_target / 1000));
}

// Fed xpusim's own predictions (configs/studies/riseml_resnet50.yaml: tpu_systemc for the TPU,
// the analytical model for the V100s), the same figures within 12%. Hidden from the default
// Catch run (the engines simulate whole ResNet-50 steps); ctest runs it under the label
// `costmodel_predicted` and reports it skipped until those device models are merged.
TEST_CASE("riseml_resnet50 with predicted throughputs is within 12% of the post", "[.][riseml_predicted]") {
  Study s = load_study(config_dir() + "/studies/riseml_resnet50.yaml");
  CompareResult r = run_study(s);
  for (const auto& x : r.rows) {
    INFO(x.option << " / " << x.target << ": " << x.error);
    REQUIRE(x.error.rfind("prediction failed", 0) != 0);
  }
  const double tol = 0.12;
  CHECK(*row(r, "tpu_v2-8_synthetic", "top1_75.7").samples_per_s_per_usd_per_h == Approx(475).epsilon(tol));
  CHECK(*row(r, "p3.8xlarge_on_demand_synthetic", "top1_75.7").samples_per_s_per_usd_per_h == Approx(256).epsilon(tol));
  CHECK(*row(r, "p3.8xlarge_reserved_synthetic", "top1_75.7").samples_per_s_per_usd_per_h == Approx(375).epsilon(tol));
  CHECK(*row(r, "tpu_v2-8_real", "top1_75.7").hours_to_target == Approx(8.15).epsilon(tol));
  CHECK(*row(r, "tpu_v2-8_real", "top1_75.7").cost_to_target_usd == Approx(55).epsilon(tol));
  CHECK(*row(r, "tpu_v2-8_real", "top1_76.4").cost_to_target_usd == Approx(73).epsilon(tol));
}
