// The three callers of the one cost function (costmodel/target_cost.hpp) agree: the same
// option (V100 x1 at the 2018 p3.2xlarge price, ResNet-50) priced by `compare` (a study row),
// by a sweep point and by validation's evaluate_cost gives the same dollars, hours and energy,
// to a fixed number of epochs and to an accuracy on a convergence curve.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "compare/compare.hpp"
#include "costmodel/cost.hpp"
#include "sweep/points.hpp"
#include "sweep/results.hpp"
#include "sweep/sweep_spec.hpp"

using namespace xpusim;

namespace {

std::string write(const std::string& name, const std::string& text) {
  auto dir = std::filesystem::temp_directory_path() / "xpusim_test_cost_callers";
  std::filesystem::create_directories(dir);
  std::string path = (dir / (name + ".yaml")).string();
  std::ofstream(path) << text;
  return path;
}

struct Target {
  std::string yaml;   // the target's keys in a study / a sweep
  double accuracy;    // 0 = epochs
  double epochs;
};

}  // namespace

TEST_CASE("cost: compare, sweep and validate give the same dollars for the same option", "[costmodel]") {
  const Target targets[] = {{"accuracy: 0.757", 0.757, 0}, {"epochs: 5", 0, 5}};
  for (const auto& tg : targets) {
    INFO(tg.yaml);
    cost::Study study = cost::load_study(write(
        "study", "name: callers\n"
                 "targets:\n"
                 "  - {label: t, model: resnet50, dataset: imagenet, metric: top1, " + tg.yaml + "}\n"
                 "options:\n"
                 "  - {label: v100, device: v100_sxm2_16gb, count: 1, precision: mixed_fp16, batch: 128,\n"
                 "     offer: aws_2018/p3.2xlarge, throughput: predict}\n"));
    cost::CompareResult cmp = cost::run_study(study);
    REQUIRE(cmp.rows.size() == 1);
    const cost::CompareRow& row = cmp.rows[0];
    INFO(row.message());
    REQUIRE(row.throughput_samples_per_s);
    REQUIRE(row.cost_to_target_usd);
    REQUIRE(row.hours_to_target);

    sweep::SweepSpec sw = sweep::load_sweep(write(
        "sweep", "name: callers\n"
                 "fixed: {model: resnet50, device: v100_sxm2_16gb, count: 1, precision: mixed_fp16, "
                 "offer: aws_2018/p3.2xlarge}\n"
                 "axes:\n"
                 "  batch: [128]\n"
                 "target: {dataset: imagenet, metric: top1, " + tg.yaml + "}\n"
                 "objectives: [cost_to_target_usd]\n"));
    sweep::Evaluator ev;
    sweep::PointResult pt = ev.evaluate(sw, sweep::make_points(sw).at(0));
    INFO(pt.note << pt.error);
    REQUIRE(pt.status == "ok");
    CHECK(pt.values.at("throughput_samples_per_s") == *row.throughput_samples_per_s);
    CHECK(pt.values.at("cost_to_target_usd") == *row.cost_to_target_usd);
    CHECK(pt.values.at("hours_to_target") == *row.hours_to_target);
    REQUIRE(row.energy_kwh);
    CHECK(pt.values.at("energy_kwh") == *row.energy_kwh);

    cost::CostQuery q;
    q.model = "resnet50";
    q.dataset = "imagenet";
    q.metric = "top1";
    q.accuracy = tg.accuracy;
    q.epochs = tg.epochs;
    q.global_batch = row.global_batch;
    q.precision = "mixed_fp16";
    q.throughput_samples_per_s = *row.throughput_samples_per_s;
    q.offer = "aws_2018/p3.2xlarge";
    cost::CostResult v = cost::evaluate_cost(q);
    CHECK(*v.cost_usd == *row.cost_to_target_usd);
    CHECK(v.hours == *row.hours_to_target);
    CHECK(*v.billed_hours == *row.billed_hours);
    CHECK(v.epochs == *row.epochs_to_target);
    // Validation compares usage dollars (no billing increments) with published figures: the
    // billed dollars are those rounded up to the offer's increment, never fewer.
    CHECK(*v.usage_cost_usd == Approx(v.hours * *v.usd_per_h));
    CHECK(*v.cost_usd >= *v.usage_cost_usd);
  }
}
