// The sweep runner: resume bookkeeping, the ordered row writer, and the three ways to spread
// points (this process, forked workers, MPI ranks). Points are dealt round-robin over the
// workers (grouped by training-step graph, assign_workers); rows come back in any order and
// are written in point order.
#include "sweep/runner.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <algorithm>

#include "common/error.hpp"
#include "common/file_guard.hpp"
#include "common/output.hpp"
#include "common/progress.hpp"
#include "sweep/mpi_transport.hpp"

namespace xpusim::sweep {

namespace fs = std::filesystem;

int max_jobs() {
  const unsigned cores = std::thread::hardware_concurrency();
  return 4 * static_cast<int>(std::max(1u, std::min(cores, 4096u)));
}

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (const char* e = std::getenv(v); e && *e) return true;
  return false;
}

bool mpi_built() {
#ifdef XPUSIM_HAVE_MPI
  return true;
#else
  return false;
#endif
}

namespace {

// The file's lines; a last line without its newline (a run killed mid-write) is cut off the
// file so that appending continues on a fresh line.
std::vector<std::string> complete_lines(const std::string& path) {
  std::string text = read_text_file(path);
  size_t end = text.rfind('\n');
  size_t keep = end == std::string::npos ? 0 : end + 1;
  if (keep != text.size()) fs::resize_file(path, keep);
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < keep) {
    size_t nl = text.find('\n', pos);
    lines.push_back(text.substr(pos, nl - pos));
    // xpusim writes LF line ends; a file with CR LF was converted by an editor or a tool.
    if (!lines.back().empty() && lines.back().back() == '\r')
      throw UserError(path + ":" + std::to_string(lines.size()) +
                      ": the line ends in CR LF (converted on Windows?); xpusim writes LF line ends: convert it back "
                      "(dos2unix) or write to another file");
    pos = nl + 1;
  }
  return lines;
}

// How often finished rows reach the row file. A flush per row cost a write(2) per point (8,000
// a second on an analytical sweep), in the one process that merges while the workers compute.
// A run killed with SIGKILL loses at most this much work, which --resume then redoes; Ctrl-C
// and SIGTERM flush everything before the summary.
constexpr auto kFlushEvery = std::chrono::milliseconds(100);

// Writes rows in the order of `order`, holding back rows that arrive early.
class OrderedWriter {
 public:
  OrderedWriter(std::ofstream& out, const std::vector<long long>& order, std::function<void()> on_row)
      : out_(out), order_(order), on_row_(std::move(on_row)), last_flush_(std::chrono::steady_clock::now()) {}
  ~OrderedWriter() { out_.flush(); }
  void add(long long index, std::string line) {
    pending_.emplace(index, std::move(line));
    bool wrote = false;
    while (next_ < order_.size()) {
      auto it = pending_.find(order_[next_]);
      if (it == pending_.end()) break;
      out_ << it->second << '\n';
      pending_.erase(it);
      ++next_;
      wrote = true;
      // The test hook may raise SIGINT: what it saw written must be on disk when the stop
      // is handled, as it is for a real signal after flush().
      if (on_row_) {
        flush();
        on_row_();
      }
    }
    if (wrote && std::chrono::steady_clock::now() - last_flush_ >= kFlushEvery) flush();
  }
  void flush() {
    out_.flush();
    if (!out_) throw UserError("sweep: row file: write failed (disk full?)");
    last_flush_ = std::chrono::steady_clock::now();
  }
  size_t written() const { return next_; }
 private:
  std::ofstream& out_;
  const std::vector<long long>& order_;
  std::function<void()> on_row_;
  std::map<long long, std::string> pending_;  // rows past a gap: dropped if the run stops
  size_t next_ = 0;
  std::chrono::steady_clock::time_point last_flush_;
};

bool stopped(const std::atomic<bool>* stop) { return stop && stop->load(); }

// A forked worker's own stop flag. The worker takes SIGINT (Ctrl-C reaches the whole process
// group) and the SIGTERM its parent forwards alike: finish the current point, then exit. It
// does not take a second signal as "kill now" (the inherited handler would), since Ctrl-C
// plus the forwarded SIGTERM are two signals for one stop; a second Ctrl-C kills the parent,
// and the worker then ends at its next write (SIGPIPE).
std::atomic<bool> g_worker_stop{false};
extern "C" void on_worker_stop(int) { g_worker_stop.store(true); }
void worker_take_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_worker_stop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

class Progress {
 public:
  Progress(const std::string& name, long long total, bool on)
      : bar_("sweep " + name, total, on), start_(std::chrono::steady_clock::now()) {}
  void update(long long done) {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    bar_.update(done, s > 0 ? fmt_sig(double(done) / s, 3) + " points/s" : "");
  }
  void finish() { bar_.finish(); }
 private:
  ProgressBar bar_;
  std::chrono::steady_clock::time_point start_;
};

void write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      _exit(3);  // the parent is gone: nothing to report to
    }
    off += static_cast<size_t>(n);
  }
}

// Rows a worker (a forked process or an MPI rank) has finished, passed on in batches of
// "INDEX<TAB>LINE\n" text: one message per ~100 ms or 32 KB rather than per point, since the
// process that merges competes with the workers for the cores. `batch` false sends each row.
class RowBatch {
 public:
  RowBatch(bool batch, std::function<void(const std::string&)> send)
      : batch_(batch), send_(std::move(send)), sent_(std::chrono::steady_clock::now()) {}
  void add(long long point, const std::string& line) {
    text_ += std::to_string(point) + "\t" + line + "\n";
    if (!batch_ || text_.size() >= 32768 || std::chrono::steady_clock::now() - sent_ >= kFlushEvery) flush();
  }
  void flush() {
    if (!text_.empty()) send_(text_);
    text_.clear();
    sent_ = std::chrono::steady_clock::now();
  }
 private:
  bool batch_;
  std::function<void(const std::string&)> send_;
  std::string text_;
  std::chrono::steady_clock::time_point sent_;
};

// Feeds each complete "INDEX<TAB>LINE\n" row at the front of `buf` to `row` and removes it; an
// incomplete last row (a pipe read can end mid-row) stays for the next read. Returns the rows fed.
long long take_rows(std::string& buf, const std::function<void(long long, std::string)>& row) {
  long long n = 0;
  size_t start = 0, nl;
  while ((nl = buf.find('\n', start)) != std::string::npos) {
    const size_t tab = buf.find('\t', start);
    if (tab == std::string::npos || tab > nl) throw InternalError("sweep: a worker's row has no point index");
    row(std::stoll(buf.substr(start, tab - start)), buf.substr(tab + 1, nl - tab - 1));
    start = nl + 1;
    ++n;
  }
  buf.erase(0, start);
  return n;
}

// --jobs N: N forked workers, each evaluating its share of the points (assign_workers) and sending
// "INDEX<TAB>LINE\n" through a pipe; this process only merges.
// Returns whether it was stopped (RunOptions::stop): then the workers were told to stop after
// their current point and only the rows they finished are merged.
bool run_forked(const SweepSpec& s, const RowFormat f, const std::vector<Point>& todo, int jobs, OrderedWriter& w,
                Progress& bar, const std::atomic<bool>* stop, bool batch_rows, int lock_fd) {
  const std::vector<int> who = assign_workers(s, todo, jobs);
  struct Worker {
    pid_t pid = -1;
    int fd = -1;
    std::string buf;
    long long expected = 0, got = 0;
  };
  std::vector<Worker> ws(static_cast<size_t>(jobs));
  std::fflush(nullptr);
  for (int k = 0; k < jobs; ++k) {
    int p[2];
    if (pipe(p) != 0) throw InternalError(std::string("sweep: pipe failed: ") + std::strerror(errno));
    pid_t pid = fork();
    if (pid < 0) throw InternalError(std::string("sweep: fork failed: ") + std::strerror(errno));
    if (pid == 0) {
      ::close(p[0]);
      // The row file's lock belongs to this run's parent: a worker left running after the
      // parent was killed must not hold it (flock lasts while any descriptor is open).
      if (lock_fd >= 0) ::close(lock_fd);
      for (const auto& prev : ws)
        if (prev.fd >= 0) ::close(prev.fd);
      int code = 0;
      if (stop) worker_take_stop_signals();
      RowBatch batch(batch_rows, [fd = p[1]](const std::string& text) { write_all(fd, text); });
      try {
        Evaluator ev;
        for (size_t i = 0; i < todo.size(); ++i) {
          if (who[i] != k) continue;
          if (stopped(stop) || g_worker_stop.load()) break;
          PointResult r = ev.evaluate(s, todo[i]);
          batch.add(r.point, format_row(s, r, f));
        }
        batch.flush();
      } catch (const std::exception& e) {
        batch.flush();  // the rows finished before the failure are kept
        std::fprintf(stderr, "sweep worker %d: %s\n", k, e.what());
        code = 1;
      }
      ::close(p[1]);
      _exit(code);  // no destructors or atexit handlers: they belong to the parent
    }
    ::close(p[1]);
    ws[k].pid = pid;
    ws[k].fd = p[0];
    for (int x : who) ws[k].expected += x == k;
  }
  long long received = 0;
  size_t open = ws.size();
  std::vector<char> chunk(1 << 16);
  bool forwarded = false;
  while (open > 0) {
    // A stop reached this process (Ctrl-C reaches the whole process group, `kill` only this
    // one): tell every worker once. They finish their point and close their pipe.
    if (stopped(stop) && !forwarded) {
      for (const auto& wk : ws)
        if (wk.fd >= 0) ::kill(wk.pid, SIGTERM);
      forwarded = true;
    }
    std::vector<pollfd> fds;
    std::vector<size_t> who;
    for (size_t k = 0; k < ws.size(); ++k)
      if (ws[k].fd >= 0) {
        fds.push_back({ws[k].fd, POLLIN, 0});
        who.push_back(k);
      }
    // A timeout, so that a stop arriving just before poll() is still forwarded at once.
    const int ready = poll(fds.data(), fds.size(), stop ? 200 : -1);
    if (ready < 0) {
      if (errno == EINTR) continue;  // a signal: the loop head looks at the stop flag
      throw InternalError(std::string("sweep: poll failed: ") + std::strerror(errno));
    }
    if (ready == 0) continue;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Worker& wk = ws[who[i]];
      ssize_t n = ::read(wk.fd, chunk.data(), chunk.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(wk.fd);
        wk.fd = -1;
        --open;
        continue;
      }
      wk.buf.append(chunk.data(), static_cast<size_t>(n));
      wk.got += take_rows(wk.buf, [&](long long point, std::string line) {
        w.add(point, std::move(line));
        bar.update(++received);
      });
    }
  }
  std::string failed;
  if (forwarded || stopped(stop)) {  // workers that stopped early (or were killed by a second signal) are expected
    for (const auto& wk : ws) waitpid(wk.pid, nullptr, 0);
    return true;
  }
  for (size_t k = 0; k < ws.size(); ++k) {
    int st = 0;
    waitpid(ws[k].pid, &st, 0);
    if (ws[k].got != ws[k].expected || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
      failed += " worker " + std::to_string(k) + " sent " + std::to_string(ws[k].got) + " of " +
                std::to_string(ws[k].expected) + " rows";
  }
  if (!failed.empty()) throw InternalError("sweep:" + failed + " (rows written so far are kept; rerun with resume)");
  return false;
}

}  // namespace

// 0..n-1 in a pseudo-random order that depends on n only (Fisher-Yates driven by
// std::mt19937_64, whose output the standard fixes, so every rank and build agrees).
static std::vector<size_t> shuffled_indices(size_t n) {
  std::vector<size_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = i;
  std::mt19937_64 rng(0x5eed5eedULL);
  for (size_t i = n; i > 1; --i) std::swap(v[i - 1], v[static_cast<size_t>(rng() % i)]);
  return v;
}

// Which worker evaluates each point (an index into `todo`). Points that share a training-step
// graph (same model, batch, precision, count) go to one worker, so each graph is built once
// in the whole run rather than once per worker: groups, in order of first appearance, go to
// the worker with the fewest points so far. Groups can differ a lot in cost (a TPU step at
// batch 128 simulates ~8x the work of batch 16), so balancing by count needs many groups to
// even out: with fewer than 8 groups per worker, points are dealt one by one instead (each
// worker then builds every graph, which is cheap when there are few), evenly per graph and
// device. Deterministic either way.
std::vector<int> assign_workers(const SweepSpec& s, const std::vector<Point>& todo, int n) {
  std::vector<int> who(todo.size(), 0);
  if (n <= 1) return who;
  std::map<std::string, std::vector<size_t>> groups;
  std::vector<std::string> order;
  std::vector<std::string> key_of(todo.size());
  for (size_t i = 0; i < todo.size(); ++i) {
    PredictRequest r = request_for(s, todo[i].choice).predict;
    std::string key = r.model + "|" + std::to_string(r.batch_per_device) + "|" + r.precision + "|" +
                      std::to_string(r.placement.count) + "|" + task_name(r.task);
    key_of[i] = key;
    auto [it, fresh] = groups.try_emplace(key);
    if (fresh) order.push_back(key);
    it->second.push_back(i);
  }
  if (order.size() < 8 * static_cast<size_t>(n)) {
    // Few graphs: points are dealt one by one, stratified. Each stratum (graph and device: what
    // sets a point's cost) is dealt evenly over the workers, continuing one counter so that the
    // totals stay even too, in a fixed shuffled order within the stratum so that the shares do
    // not follow another axis either. Dealt by index, shares followed the fastest axis: with 2
    // workers and batch [16, 32, 64, 128] last, one worker got every batch 32 and 128 point
    // (1.56x instead of ~1.9x on 2 cores).
    std::map<std::string, std::vector<size_t>> strata;
    std::vector<std::string> strata_order;
    for (size_t i = 0; i < todo.size(); ++i) {
      const std::string key = key_of[i] + "|" + request_for(s, todo[i].choice).predict.placement.device;
      auto [it, fresh] = strata.try_emplace(key);
      if (fresh) strata_order.push_back(key);
      it->second.push_back(i);
    }
    size_t dealt = 0;
    for (const auto& key : strata_order) {
      const std::vector<size_t>& members = strata[key];
      for (size_t k : shuffled_indices(members.size())) who[members[k]] = int(dealt++ % static_cast<size_t>(n));
    }
    return who;
  }
  std::vector<size_t> load(static_cast<size_t>(n), 0);
  for (const auto& key : order) {
    size_t w = 0;
    for (size_t k = 1; k < load.size(); ++k)
      if (load[k] < load[w]) w = k;
    for (size_t i : groups[key]) who[i] = int(w);
    load[w] += groups[key].size();
  }
  return who;
}

std::vector<PointResult> read_rows(const SweepSpec& s, const std::string& path, RowFormat f) {
  std::vector<PointResult> rows;
  std::vector<std::string> lines = complete_lines(path);
  size_t first = 0;
  if (f == RowFormat::csv) {
    if (lines.empty()) return rows;
    if (lines[0] != csv_header(s))
      throw UserError(path + ":1: the columns are not this sweep's (" + s.name +
                      "); write to another file or run without resume");
    first = 1;
  }
  for (size_t i = first; i < lines.size(); ++i)
    rows.push_back(parse_row(s, lines[i], f, path + ":" + std::to_string(i + 1)));
  return rows;
}

namespace {

// Resumed rows are kept as they are, so a hand-edited number would reach the summary: a few
// of them (the first, the middle and the last) are evaluated again and must format to the
// same line. Points are deterministic, so any difference is an edit or another xpusim.
void verify_resumed_rows(const SweepSpec& s, const std::vector<Point>& points, const std::vector<PointResult>& have,
                         const RunOptions& o) {
  if (have.empty()) return;
  std::vector<size_t> pick = {0, have.size() / 2, have.size() - 1};
  Evaluator ev;
  size_t last = have.size();
  for (size_t i : pick) {
    if (i == last) continue;
    last = i;
    PointResult again = ev.evaluate(s, points[static_cast<size_t>(have[i].point)]), kept = have[i];
    // Notes may quote a path as this invocation spelled it: status and numbers must match.
    again.note.clear();
    kept.note.clear();
    again.error.clear();
    kept.error.clear();
    const std::string want = format_row(s, again, o.format), got = format_row(s, kept, o.format);
    if (want != got)
      throw UserError(o.output + ":" + std::to_string(i + (o.format == RowFormat::csv ? 2 : 1)) + ": point " +
                      std::to_string(have[i].point) +
                      " is not what this sweep computes for it (edited, or written by another xpusim version); "
                      "write to another file or run without resume");
  }
}

}  // namespace

RunStats run_sweep(const SweepSpec& s, const RunOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  RunStats st;
  mpi::World world;
  if (o.mpi) {
    // Like starting the processes, wiring MPI's ranks is launcher start-up (~0.3 s here with
    // Open MPI, mostly waiting): it is reported apart, so that points/s measures the sweep.
    world = mpi::init();
    const auto t1 = std::chrono::steady_clock::now();
    st.mpi_startup_seconds = std::chrono::duration<double>(t1 - t0).count();
    t0 = t1;
  }
  st.root = world.rank == 0;
  st.processes = o.mpi ? world.size : 1;
  const std::vector<Point> points = make_points(s);
  st.points = static_cast<long long>(points.size());
  // Another sweep (or a --resume of this one) appending to the same row file would interleave
  // rows and leave duplicates that every later --resume refuses: one writer at a time.
  FileLock row_lock;
  if (st.root) row_lock = FileLock(o.output, "sweep: row file");

  // Rank 0 (or the only process) decides what is left to run.
  std::vector<long long> todo_idx;
  std::ofstream out;
  if (st.root) {
    std::set<long long> done;
    if (o.resume && fs::exists(o.output)) {
      std::vector<PointResult> have = read_rows(s, o.output, o.format);
      for (size_t i = 0; i < have.size(); ++i) {
        const PointResult& r = have[i];
        std::string where = o.output + ":" + std::to_string(i + (o.format == RowFormat::csv ? 2 : 1));
        if (r.point < 0 || r.point >= st.points)
          throw UserError(where + ": point " + std::to_string(r.point) + " is not a point of sweep " + s.name);
        // The request fields must be this sweep's for that point: catches a file of another sweep.
        const Point& p = points[static_cast<size_t>(r.point)];
        std::map<std::string, std::string> eff;
        for (const auto& [k, v] : s.fixed) eff[k] = v;
        for (size_t a = 0; a < s.axes.size(); ++a)
          for (const auto& [k, v] : s.axes[a].values[p.choice[a]]) eff[k] = v;
        for (size_t c = 0; c < s.columns.size(); ++c)
          if (r.request[c] != canonical_value(eff[s.columns[c]]))
            throw UserError(where + ": point " + std::to_string(r.point) + " has " + s.columns[c] + "=" + r.request[c] +
                            ", but this sweep's point " + std::to_string(r.point) + " has " + s.columns[c] + "=" +
                            eff[s.columns[c]] + "; write to another file or run without resume");
        if (!done.insert(r.point).second) throw UserError(where + ": point " + std::to_string(r.point) + " twice");
        // Rows are written in point order (a prefix of what each run had left), so a row
        // after a larger point was moved by hand.
        if (i > 0 && r.point < have[i - 1].point)
          throw UserError(where + ": point " + std::to_string(r.point) + " after point " +
                          std::to_string(have[i - 1].point) + ": xpusim writes rows in point order (edited?); "
                          "write to another file or run without resume");
      }
      verify_resumed_rows(s, points, have, o);
      // An empty file (or one whose header was cut short) gets its header again.
      bool header = o.format == RowFormat::csv && fs::file_size(o.output) == 0;
      out.open(o.output, std::ios::app | std::ios::binary);
      if (header) out << csv_header(s) << '\n';
    } else {
      out.open(o.output, std::ios::trunc | std::ios::binary);
      if (o.format == RowFormat::csv) out << csv_header(s) << '\n';
    }
    if (!out) throw UserError(o.output + ": cannot write");
    out.flush();
    for (const auto& p : points)
      if (!done.count(p.index)) todo_idx.push_back(p.index);
    st.resumed = static_cast<long long>(done.size());
  }
  if (o.mpi) mpi::broadcast(todo_idx);
  std::vector<Point> todo;
  todo.reserve(todo_idx.size());
  for (long long i : todo_idx) todo.push_back(points[static_cast<size_t>(i)]);
  st.computed = static_cast<long long>(todo.size());

  OrderedWriter w(out, todo_idx, st.root ? o.on_row : std::function<void()>());
  const std::atomic<bool>* stop = o.mpi ? nullptr : o.stop;
  Progress bar(s.name, st.computed, o.progress && st.root);
  if (o.mpi && world.size > 1) {
    Evaluator ev;
    const std::vector<int> who = assign_workers(s, todo, world.size);
    try {
      if (!st.root) {
        RowBatch batch(true, mpi::send_rows);
        for (size_t i = 0; i < todo.size(); ++i) {
          if (who[i] != world.rank) continue;
          PointResult r = ev.evaluate(s, todo[i]);
          batch.add(r.point, format_row(s, r, o.format));
        }
        batch.flush();
        mpi::send_done();
        mpi::wait_release();  // MPI_Finalize would spin; wait asleep until rank 0 is done
      } else {
        long long received = 0;
        int running = world.size - 1;
        std::string rows;
        bool done = false;
        auto take = [&](bool block) {
          while (running > 0 && mpi::receive(block, rows, done)) {
            if (done) --running;
            else
              take_rows(rows, [&](long long point, std::string line) {
                w.add(point, std::move(line));
                bar.update(++received);
              });
            if (block) break;
          }
        };
        for (size_t i = 0; i < todo.size(); ++i) {
          if (who[i] != 0) continue;
          PointResult r = ev.evaluate(s, todo[i]);
          w.add(r.point, format_row(s, r, o.format));
          bar.update(++received);
          take(false);
        }
        while (running > 0) take(true);
        mpi::release_all(world.size);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "xpusim sweep (rank %d): %s\n", world.rank, e.what());
      mpi::abort_all(1);
    }
  } else if (o.jobs > 1 && todo.size() > 1) {
    // No more workers than points left: --jobs 1000 forked 1,000 processes for 9 points.
    const int jobs = static_cast<int>(std::min<size_t>(static_cast<size_t>(o.jobs), todo.size()));
    st.processes = jobs;
    st.interrupted = run_forked(s, o.format, todo, jobs, w, bar, stop, o.batch_rows, row_lock.fd());
  } else {
    Evaluator ev;
    long long k = 0;
    for (const auto& p : todo) {
      if (stopped(stop)) {
        st.interrupted = true;
        break;
      }
      PointResult r = ev.evaluate(s, p);
      w.add(r.point, format_row(s, r, o.format));
      bar.update(++k);
    }
  }
  bar.finish();
  if (st.root) w.flush();
  st.written = static_cast<long long>(w.written());
  if (st.interrupted && w.written() == todo.size()) st.interrupted = false;  // the stop came after the last point
  if (st.root && !st.interrupted && w.written() != todo.size())
    throw InternalError("sweep: " + std::to_string(w.written()) + " of " + std::to_string(todo.size()) + " rows written");
  if (o.mpi) mpi::finalize();
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

}  // namespace xpusim::sweep
