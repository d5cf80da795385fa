// The shipped 2026 cloud study (configs/studies/resnet50_cloud_2026.yaml): what its table rests
// on, not its figures. Every option is costed; an option's spot and on-demand rows differ only in
// price; the nodes that decode JPEGs on the same host CPUs share the host's input-bound rate,
// and decoding on the GPUs (DALI) lifts it.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "compare/compare.hpp"
#include "xpusim_test_paths.hpp"

using namespace xpusim;
using namespace xpusim::cost;

TEST_CASE("resnet50_cloud_2026: every option costed, spot = on demand x price ratio, host-bound nodes tie",
          "[costmodel][study]") {
  Study s = load_study(std::string(XPUSIM_DEFAULT_CONFIG_DIR) + "/studies/resnet50_cloud_2026.yaml");
  CompareResult r = run_study(s);
  std::map<std::string, const CompareRow*> by;
  for (const auto& row : r.rows) {
    INFO(row.option << ": " << row.message());
    CHECK(row.error.empty());
    REQUIRE(row.cost_to_target_usd.has_value());
    CHECK(*row.cost_to_target_usd > 0);
    // Labels are "node/global_batch=G(NxB)"; the node part names the option here.
    CHECK(row.option.find("/global_batch=" + std::to_string(row.global_batch) + "(") != std::string::npos);
    by[row.option.substr(0, row.option.find('/'))] = &row;
  }
  REQUIRE(by.size() == 13);
  // Same placement, same throughput: the cost ratio is the price ratio (per-second billing,
  // runs far past the one-minute minimum).
  for (const char* base : {"aws_p5_8xh100", "aws_p6_8xb200", "aws_p4d_8xa100_40gb", "aws_p6_8xb200_dali"}) {
    const CompareRow& od = *by.at(base);
    const CompareRow& spot = *by.at(std::string(base) + "_spot");
    INFO(base);
    CHECK(*spot.throughput_samples_per_s == Approx(*od.throughput_samples_per_s));
    CHECK(*spot.cost_to_target_usd / *od.cost_to_target_usd == Approx(*spot.price_usd_per_h / *od.price_usd_per_h).epsilon(1e-3));
  }
  // DGX H100, H200 and B200 hosts have the same CPUs (2 x 56 cores): with PyTorch's DataLoader
  // decoding on them, the three GPU generations run at the host's rate.
  for (const char* o : {"aws_p5_8xh100", "aws_p5en_8xh200", "aws_p6_8xb200"}) {
    INFO(o);
    CHECK(by.at(o)->bottleneck == "input_pipeline");
    CHECK(*by.at(o)->throughput_samples_per_s == Approx(*by.at("aws_p5_8xh100")->throughput_samples_per_s));
  }
  // Decoding on the GPUs frees the step from the host, and then the faster GPU is faster.
  const double h100_dali = *by.at("aws_p5_8xh100_dali")->throughput_samples_per_s;
  const double b200_dali = *by.at("aws_p6_8xb200_dali")->throughput_samples_per_s;
  CHECK(by.at("aws_p6_8xb200_dali")->bottleneck != "input_pipeline");
  CHECK(h100_dali > *by.at("aws_p5_8xh100")->throughput_samples_per_s);
  CHECK(b200_dali > h100_dali);
}

namespace {
// Width of the first bar drawn for `label` (the hours chart comes first) and its x.
std::pair<double, double> first_bar(const std::string& svg, const std::string& label) {
  const auto at = svg.find(">" + label + "</text><rect x=\"");
  REQUIRE(at != std::string::npos);
  const auto x = svg.find("x=\"", at) + 3;
  const auto w = svg.find("width=\"", at) + 7;
  return {std::stod(svg.substr(x)), std::stod(svg.substr(w))};
}
}  // namespace

TEST_CASE("compare --chart: facets of one metric share the scale and the label column", "[costmodel][study][chart]") {
  // 13 options: two facets per metric. A bar in the second facet (B200 with DALI) must be drawn
  // to the first facet's scale, from the same x, so lengths compare across facets.
  Study s = load_study(std::string(XPUSIM_DEFAULT_CONFIG_DIR) + "/studies/resnet50_cloud_2026.yaml");
  CompareResult r = run_study(s);
  std::map<std::string, double> hours;
  for (const auto& row : r.rows) hours[row.option.substr(0, row.option.find('/'))] = *row.hours_to_target;
  const std::string svg = compare_chart_svg(r);
  REQUIRE(svg.find("(options 9 to 13)") != std::string::npos);
  auto [x1, w1] = first_bar(svg, "aws_p5_8xh100/global_batch=2048(8x256) / top1_75.7");        // facet 1
  auto [x2, w2] = first_bar(svg, "aws_p6_8xb200_dali/global_batch=2048(8x256) / top1_75.7");   // facet 2
  CHECK(x1 == Approx(x2));
  CHECK(w2 / w1 == Approx(hours["aws_p6_8xb200_dali"] / hours["aws_p5_8xh100"]).epsilon(0.01));
}
