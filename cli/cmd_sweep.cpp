// `xpusim sweep SWEEP.yaml -o ROWS.csv|.jsonl`: a design-space sweep (configs/sweeps/), one
// row per point streamed to the row file, then a summary (Pareto front, best point per
// objective) on stdout and an optional SVG chart. --jobs N forks N workers; under mpirun the
// points are spread over the ranks. Every mode writes the same bytes. Ctrl-C (or SIGTERM)
// stops after the points being evaluated: the finished rows stay in the row file, a summary
// of them is printed, the exit code is 130 and --resume continues (not under mpirun, where
// mpirun's own signal handling applies).
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "common/checked_io.hpp"
#include "common/config_paths.hpp"
#include "common/file_guard.hpp"
#include "common/error.hpp"
#include "common/output.hpp"
#include "common/progress.hpp"
#include "sweep/runner.hpp"

namespace xpusim::cli {

namespace {

bool ends_with(const std::string& s, const std::string& suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

struct SweepArgs {
  std::string file, output, format, summary = "table", chart;
  int jobs = 1;
  bool resume = false, progress = false, no_progress = false, dry_run = false;
};

}  // namespace

void register_sweep(CLI::App& app) {
  auto a = std::make_shared<SweepArgs>();
  auto* cmd = app.add_subcommand("sweep", "design-space sweep: predict every point of SWEEP.yaml, Pareto front of the results");
  cmd->add_option("sweep", a->file, "sweep YAML (path, or a name under configs/sweeps/)")->required();
  cmd->add_option("-o,--output", a->output, "row file, one line per point: FILE.csv or FILE.jsonl")->required();
  cmd->add_option("--format", a->format, "row format csv|jsonl (default: from the file's extension)");
  cmd->add_option("--summary", a->summary, "summary on stdout: table|json")->capture_default_str();
  cmd->add_option("--chart", a->chart, "also write an SVG chart of the first two objectives and the Pareto front");
  cmd->add_option("-j,--jobs", a->jobs, "worker processes on this machine (under mpirun: one per rank)")
      ->capture_default_str();
  cmd->add_flag("--resume", a->resume, "keep the rows already in the output file and run only the others");
  cmd->add_flag("--progress", a->progress, "progress bar on stderr even when it is not a terminal");
  cmd->add_flag("--dry-run", a->dry_run, "check the sweep and print its point count; run nothing");
  cmd->callback([a] {
    // Bounded by the machine: more workers than 4 per core only queue for the cores (each
    // is a forked copy of the process), and --jobs 100000 forked until fork() failed.
    const int max_jobs = sweep::max_jobs();
    if (a->jobs < 1 || a->jobs > max_jobs)
      throw UserError("--jobs: must be in [1, " + std::to_string(max_jobs) + "] (4 per core on this machine), got " +
                      std::to_string(a->jobs));
    if (a->summary != "table" && a->summary != "json")
      throw UserError("--summary: '" + a->summary + "' is not table or json");
    if (!a->chart.empty() && !ends_with(a->chart, ".svg")) throw UserError("--chart: '" + a->chart + "' must end in .svg");
    sweep::RunOptions o;
    o.output = a->output;
    std::string fmt = a->format;
    if (fmt.empty()) {
      if (ends_with(a->output, ".csv")) fmt = "csv";
      else if (ends_with(a->output, ".jsonl")) fmt = "jsonl";
      else throw UserError("--output: '" + a->output + "' ends in neither .csv nor .jsonl; give --format");
    }
    if (fmt != "csv" && fmt != "jsonl") throw UserError("--format: '" + fmt + "' is not csv or jsonl");
    o.format = fmt == "csv" ? sweep::RowFormat::csv : sweep::RowFormat::jsonl;
    o.resume = a->resume;
    o.jobs = a->jobs;
    o.mpi = sweep::launched_by_mpi();
    if (o.mpi && a->jobs > 1) throw UserError("--jobs: under mpirun each rank is one worker; start more ranks instead");
    if (a->progress) setenv("XPUSIM_PROGRESS", "1", 1);
    o.progress = ProgressBar::stderr_is_interactive();

    // The whole sweep is checked (every axis value) before any point runs.
    const std::string sweep_file = config_argument("sweeps", a->file, "sweep");
    // Outputs never destroy the input or each other (by device and inode, links followed).
    refuse_output_over_input("--output", a->output, {sweep_file});
    refuse_output_over_input("--chart", a->chart, {sweep_file});
    refuse_shared_outputs({{"--output", a->output}, {"--chart", a->chart}});
    sweep::SweepSpec s = sweep::load_sweep(sweep_file);
    if (a->dry_run) {
      std::cout << "sweep " << s.name << ": " << sweep::point_count(s) << " points (" << sweep::sampling_name(s.sampling)
                << ", " << s.axes.size() << " axes); MPI " << (sweep::mpi_built() ? "built" : "not built") << "\n";
      return;
    }
    std::optional<StopOnSignal> guard;
    if (!o.mpi) {
      guard.emplace();
      o.stop = &guard->flag();
      // The interrupt test hook counts written rows: with workers, rows must then arrive (and
      // be flushed) one by one for "after the N-th row" to stop a run that has points left.
      if (std::getenv("XPUSIM_TEST_INTERRUPT_AFTER")) {
        o.on_row = test_interrupt_point;
        o.batch_rows = false;
      }
    }
    sweep::RunStats st = sweep::run_sweep(s, o);
    guard.reset();
    if (!st.root) return;
    const long long run = st.interrupted ? st.written : st.computed;
    std::fprintf(stderr, "sweep %s: %lld points, %lld resumed, %lld run in %.2f s (%.1f points/s, %d process%s%s)\n",
                 s.name.c_str(), st.points, st.resumed, run, st.seconds,
                 st.seconds > 0 ? double(run) / st.seconds : 0.0, st.processes, st.processes == 1 ? "" : "es",
                 o.mpi ? (", after " + fmt_fixed(st.mpi_startup_seconds, 2) + " s of MPI start-up").c_str() : "");
    std::vector<sweep::PointResult> rows = sweep::read_rows(s, o.output, o.format);
    sweep::Summary sum = sweep::summarize(s, rows);
    sweep::print_summary(std::cout, s, rows, sum, a->summary == "json");
    if (st.interrupted) {
      check_stream(std::cout, "stdout");
      throw InterruptedError("sweep stopped after " + std::to_string(st.resumed + st.written) + " of " +
                             std::to_string(st.points) + " points (" + std::to_string(st.resumed) +
                             " resumed); the summary covers the finished points, kept in " + o.output +
                             "; continue with --resume" + (a->chart.empty() ? "" : " (no chart for a partial run)"));
    }
    if (!a->chart.empty())
      write_file_atomic(a->chart, [&](std::ostream& out) { out << sweep::summary_chart_svg(s, rows, sum); }, "--chart");
  });
}

}  // namespace xpusim::cli
