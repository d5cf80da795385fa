// Data outputs and charts (issue 17): numbers round-trip, CSV from JSON records (dotted
// columns, empty cells for null, arrays of objects left to JSON), documents carry their
// schema, the compare conclusion is derived from the rows, charts hold at most 8 series.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <sstream>

#include "common/error.hpp"
#include "common/records.hpp"
#include "common/svg_chart.hpp"
#include "compare/compare.hpp"
#include "compare/compare_summary.hpp"

using namespace xpusim;

TEST_CASE("fmt_roundtrip: shortest text that reads back to the same double", "[outputs]") {
  CHECK(fmt_roundtrip(0.1) == "0.1");
  CHECK(fmt_roundtrip(25557032.0) == "25557032");
  CHECK(fmt_roundtrip(-0.0) == "0");
  for (double v : {1.0 / 3.0, 2.0 / 3.0 * 1e-9, 784509925616.123, 1e300, 5e-324, 3128.4567890123457}) {
    std::string t = fmt_roundtrip(v);
    CHECK(std::strtod(t.c_str(), nullptr) == v);
    CHECK(t.size() <= 24);
  }
}

TEST_CASE("print_csv_records: one row per record, dotted columns, empty for null", "[outputs]") {
  nlohmann::json recs = nlohmann::json::array();
  recs.push_back({{"name", "a"}, {"x_s", 0.5}, {"util", {{"mxu", 0.25}}}, {"missing", nullptr},
                  {"shape", {1, 2}}, {"rows", nlohmann::json::array({{{"k", 1}}})}});
  recs.push_back({{"name", "b,c"}, {"x_s", 2}, {"extra", true}});
  std::ostringstream os;
  print_csv_records(os, recs, {"name"});
  CHECK(os.str() ==
        "name,missing,shape,util.mxu,x_s,extra\n"
        "a,,\"[1,2]\",0.25,0.5,\n"
        "\"b,c\",,,,2,true\n");
}

TEST_CASE("output_document adds schema_version and xpusim_version", "[outputs]") {
  nlohmann::json d = output_document({{"rows", nlohmann::json::array()}});
  CHECK(d["schema_version"] == kOutputSchemaVersion);
  CHECK(d["xpusim_version"].is_string());
  CHECK(d.contains("rows"));
}

TEST_CASE("compare conclusion: cheapest and fastest per target, runner-up on other hardware", "[outputs][costmodel]") {
  cost::CompareResult r;
  auto row = [](std::string opt, std::string dev, double usd_h, double hours, double usd, std::string b) {
    cost::CompareRow x;
    x.option = opt;
    x.target = "t";
    x.device = dev;
    x.count = 1;
    x.price_usd_per_h = usd_h;
    x.hours_to_target = hours;
    x.cost_to_target_usd = usd;
    x.bottleneck = b;
    return x;
  };
  r.rows.push_back(row("tpu", "tpu_v2", 10, 10, 100, "input_pipeline"));
  r.rows.push_back(row("gpu_on_demand", "v100", 18.75, 8, 150, "compute"));
  r.rows.push_back(row("gpu_reserved", "v100", 15, 8, 120, "compute"));
  cost::CompareRow syn = row("tpu_synthetic", "tpu_v2", 10, 0, 0, "mxu");
  syn.hours_to_target.reset();
  syn.cost_to_target_usd.reset();
  syn.note = "synthetic data";
  r.rows.push_back(syn);
  auto c = cost::conclude(r);
  REQUIRE(c.size() == 1);
  CHECK(c[0].cheapest.row == 0);
  CHECK(c[0].cheapest.runner_up == 2);  // the cheaper of the two v100 options
  CHECK(c[0].fastest.row == 1);
  CHECK(c[0].fastest.runner_up == 0);   // not gpu_reserved: same hardware
  CHECK(c[0].fastest.why.find("compute") != std::string::npos);
  CHECK(c[0].cheapest.why.find("input pipeline") != std::string::npos);
  CHECK(c[0].cheapest.why.find("won on price") != std::string::npos);
  REQUIRE(c[0].not_costed.size() == 1);
  CHECK(c[0].not_costed[0].second == 1);
  auto lines = cost::conclusion_lines(r, c, false);
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  CHECK(all.find("cheapest: tpu, $100.00, 1.20x cheaper than gpu_reserved ($120.00)") != std::string::npos);
  CHECK(all.find("fastest:  gpu_on_demand, 8.00 h, 1.25x faster than tpu (10.0 h)") != std::string::npos);

  // The table: conclusion first, lines within 100 columns, columns empty in every row left out.
  r.study = "s";
  for (int i = 0; i < 12; ++i) r.description += "a long description ";
  std::ostringstream os;
  cost::print_compare(os, r, OutputFormat::table);
  std::istringstream in(os.str());
  std::string line, text = os.str();
  while (std::getline(in, line)) CHECK(line.size() <= 100);
  CHECK(text.find("cheapest: tpu") < text.find("option "));
  CHECK(text.find("kWh") == std::string::npos);             // no energy in any row
  CHECK(text.find("breakeven_runs") == std::string::npos);  // no owned hardware
  CHECK(text.find("[1] synthetic data") != std::string::npos);
}

TEST_CASE("charts: viewBox, tooltips, not-drawn points with reasons, at most 8 series", "[outputs][charts]") {
  SvgChart c;
  c.title = "t";
  c.x_label = "devices (count)";
  c.y_label = "throughput (samples/s)";
  c.log_x = c.log_y = true;
  c.x_ticks = {{1, "1"}, {2, "2"}, {4, "4"}, {8, "8"}};
  SvgSeries s{"a", palette_colour(0), {{1, 100}, {2, 0}, {8, 700}}, {"row 1", "row 2", "row 3"}};
  std::vector<std::string> not_drawn;
  std::string svg = svg_xy_chart(c, {s}, &not_drawn);
  CHECK(svg.find("viewBox=") != std::string::npos);
  CHECK(svg.find("<title>row 3</title>") != std::string::npos);
  CHECK(svg.find(">4</text>") != std::string::npos);
  CHECK(svg.find(">5</text>") == std::string::npos);
  REQUIRE(not_drawn.size() == 1);
  CHECK(not_drawn[0] == "row 2: not drawn, y <= 0 on a log axis");
  std::vector<SvgSeries> many(9, s);
  CHECK_THROWS_AS(svg_xy_chart(c, many), InternalError);
  auto parts = split_series(many);
  REQUIRE(parts.size() == 2);
  CHECK(parts[0].size() == 8);
  CHECK(parts[1].size() == 1);
}

TEST_CASE("charts: legends fit 1,100 px and show the series' own mark (issue 36)", "[output]") {
  CHECK(wrap_words("device=tpu_v2 count=8 precision=bf16", 20) ==
        std::vector<std::string>{"device=tpu_v2", "count=8", "precision=bf16"});
  CHECK(wrap_words("abcdefghij", 4) == std::vector<std::string>{"abcd", "efgh", "ij"});
  CHECK(wrap_words("", 10) == std::vector<std::string>{""});
  SvgChart c;
  c.title = "t";
  c.x_label = "x (s)";
  c.y_label = "y (s)";
  c.width = 760;
  SvgSeries dots{std::string(200, 'a'), palette_colour(0), {{1, 1}, {2, 2}}, {}};
  SvgSeries line{"front", palette_colour(1), {{1, 1}, {2, 2}}, {}};
  line.line = true;
  line.markers = false;
  const std::string svg = svg_xy_chart(c, {dots, line});
  CHECK(svg.find("width=\"1100\"") != std::string::npos);  // widened to the cap, not past it
  CHECK(svg.find("<tspan") != std::string::npos);            // the long label wrapped
  // The dots' legend is a dot (no legend line); the line's legend is a line (no dot).
  const size_t g2 = svg.find("data-label=\"front\"");
  REQUIRE(g2 != std::string::npos);
  const std::string first = svg.substr(0, g2), second = svg.substr(g2);
  CHECK(first.find("legend-marker") != std::string::npos);
  CHECK(first.find("stroke-width=\"2\"") == std::string::npos);
  CHECK(second.find("legend-marker") == std::string::npos);
  CHECK(second.find("stroke-width=\"2\"") != std::string::npos);
}
