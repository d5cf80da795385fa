// `xpusim compare STUDY.yaml`: hours, dollars and energy to a target for each option of a
// study (configs/studies/), as a table, Markdown, CSV or JSON, plus an optional SVG/HTML chart.
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "common/checked_io.hpp"
#include "common/error.hpp"
#include "common/progress.hpp"
#include "costmodel/compare.hpp"
#include "models/zoo.hpp"

namespace xpusim::cli {

void register_compare(CLI::App& app) {
  auto study = std::make_shared<std::string>();
  auto fmt = std::make_shared<std::string>();
  auto chart = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("compare", "hours, dollars and kWh to a target accuracy for each option of a study");
  cmd->add_option("study", *study, "study YAML (path, or a name under configs/studies/)")->required();
  add_format_option(*cmd, *fmt, "table|markdown|csv|json", "table");
  cmd->add_option("--chart", *chart, "also write a chart: FILE.svg or FILE.html");
  cmd->callback([study, fmt, chart] {
    OutputFormat f = parse_output_format(
        *fmt, {OutputFormat::table, OutputFormat::markdown, OutputFormat::csv, OutputFormat::json});
    bool html = false;
    if (!chart->empty()) {
      auto ends = [&](const std::string& suf) {
        return chart->size() >= suf.size() && chart->compare(chart->size() - suf.size(), suf.size(), suf) == 0;
      };
      if (ends(".html") || ends(".htm")) html = true;
      else if (!ends(".svg")) throw UserError("--chart: '" + *chart + "' must end in .svg or .html");
    }
    std::string path = resolve_config("studies", *study);
    cost::Study s = cost::load_study(path);
    cost::CompareResult r = cost::run_study(s, {}, ProgressBar::stderr_is_interactive());
    cost::print_compare(std::cout, r, f);
    if (!chart->empty()) {
      write_file_checked(
          *chart, [&](std::ostream& out) { out << (html ? cost::compare_chart_html(r) : cost::compare_chart_svg(r)); },
          "--chart");
    }
  });
}

}  // namespace xpusim::cli
