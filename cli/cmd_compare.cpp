// `xpusim compare STUDY.yaml`: hours, dollars and energy to a target for each option of a
// study (configs/studies/), as a table, Markdown, CSV or JSON, plus an optional SVG/HTML chart.
// --out FILE keeps every finished row in a row file (rewritten atomically after each row);
// Ctrl-C stops after the current row (exit 130) and --resume continues the file.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "common/file_guard.hpp"
#include "common/checked_io.hpp"
#include "common/error.hpp"
#include "common/progress.hpp"
#include "compare/compare.hpp"
#include "models/zoo.hpp"

namespace xpusim::cli {

namespace {
struct CompareArgs {
  std::string study, format, chart, out;
  bool resume = false;
};
}  // namespace

void register_compare(CLI::App& app) {
  auto a = std::make_shared<CompareArgs>();
  auto* cmd = app.add_subcommand("compare", "hours, dollars and kWh to a target accuracy for each option of a study");
  cmd->add_option("study", a->study, "study YAML (path, or a name under configs/studies/)")->required();
  add_format_option(*cmd, a->format, "table|markdown|csv|json", "table");
  cmd->add_option("--chart", a->chart, "also write a chart: FILE.svg or FILE.html");
  cmd->add_option("--out", a->out,
                  "also write the rows to FILE as they finish, every field with exact numbers (--format csv or json); "
                  "Ctrl-C keeps the finished rows there");
  cmd->add_flag("--resume", a->resume,
                "continue the rows in --out FILE (written for the same study) instead of starting over");
  cmd->callback([a] {
    OutputFormat f = parse_output_format(
        a->format, {OutputFormat::table, OutputFormat::markdown, OutputFormat::csv, OutputFormat::json});
    bool html = false;
    const std::string& chart = a->chart;
    if (!chart.empty()) {
      auto ends = [&](const std::string& suf) {
        return chart.size() >= suf.size() && chart.compare(chart.size() - suf.size(), suf.size(), suf) == 0;
      };
      if (ends(".html") || ends(".htm")) html = true;
      else if (!ends(".svg")) throw UserError("--chart: '" + chart + "' must end in .svg or .html");
    }
    if (a->resume && a->out.empty()) throw UserError("--resume: needs --out FILE (the rows to continue)");
    if (!a->out.empty() && f != OutputFormat::csv && f != OutputFormat::json)
      throw UserError("--out: row files are csv or json; give --format csv or --format json");
    std::string path = config_argument("studies", a->study, "study");
    // `compare st.yaml --out st.yaml` replaced the study with its own rows (exit 0).
    refuse_output_over_input("--out", a->out, {path});
    refuse_output_over_input("--chart", chart, {path});
    refuse_shared_outputs({{"--out", a->out}, {"--chart", chart}});
    cost::Study s = cost::load_study(path);

    cost::StudyRunControl control;
    std::string inputs;
    if (!a->out.empty()) {
      inputs = cost::compare_inputs_fingerprint(s);
      std::error_code ec;
      if (a->resume && std::filesystem::exists(a->out, ec)) {
        cost::CompareRowFile prev;
        try {
          prev = cost::read_compare_rows(a->out, f);
        } catch (const UserError& e) {
          throw UserError(std::string("--resume: ") + e.what() + "; run without --resume, or give another --out");
        }
        if (prev.inputs != inputs)
          throw UserError("--resume: " + a->out + " was written for other inputs (inputs fingerprint " + prev.inputs +
                          ", this study file and xpusim version give " + inputs +
                          "); run without --resume, or give another --out");
        if (!prev.rows_problem.empty()) throw UserError("--resume: " + prev.rows_problem);
        control.done = std::move(prev.rows);
      }
      control.on_row = [&](const cost::CompareResult& partial) {
        write_file_atomic(a->out, [&](std::ostream& os) { cost::write_compare_rows(os, partial, f, inputs, false); },
                          "--out");
        test_interrupt_point();
      };
    }
    StopOnSignal guard;
    control.stop = &guard.flag();
    cost::CompareResult r = cost::run_study(s, {}, ProgressBar::stderr_is_interactive(), control);
    if (!a->out.empty())
      write_file_atomic(
          a->out, [&](std::ostream& os) { cost::write_compare_rows(os, r, f, inputs, !r.interrupted); }, "--out");
    cost::print_compare(std::cout, r, f, "--format csv or json");
    if (r.interrupted) {
      check_stream(std::cout, "stdout");
      throw InterruptedError("compare stopped after " + std::to_string(r.rows.size()) + " of " +
                             std::to_string(r.total_rows) + " rows (" + std::to_string(r.resumed_rows) +
                             " resumed); the finished rows are shown" +
                             (a->out.empty() ? std::string(" (give --out FILE to keep them)")
                                             : " and kept in " + a->out + "; continue with --resume") +
                             "; no buy-vs-rent figures for a partial run");
    }
    if (!chart.empty()) {
      write_file_checked(
          chart, [&](std::ostream& out) { out << (html ? cost::compare_chart_html(r) : cost::compare_chart_svg(r)); },
          "--chart");
    }
  });
}

}  // namespace xpusim::cli
