#include "validation/measure.hpp"

#include <cerrno>
#include <algorithm>
#include <charconv>
#include <cstring>
#include <sstream>
#include <chrono>
#include <ctime>
#include <fstream>
#include <iterator>
#include <thread>

#include "common/error.hpp"
#include "common/fingerprint.hpp"
#include "common/output.hpp"
#include "common/progress.hpp"
#include "common/stats.hpp"
#include "devices/analytical/host_detect.hpp"
#include "models/zoo.hpp"

#ifndef XPUSIM_VERSION
#define XPUSIM_VERSION "unknown"
#endif

namespace xpusim::validation {

const std::vector<MeasureCase>& default_measure_cases() {
  static const std::vector<MeasureCase> cases = {
      {"mnist_mlp", 128}, {"mnist_cnn", 128}, {"cifar10_cnn", 32}, {"imdb_fasttext", 32}, {"lstm_textgen", 128},
  };
  return cases;
}

std::vector<MeasureCase> parse_measure_cases(const std::string& spec, const std::string& flag) {
  std::vector<MeasureCase> out;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    std::string item = spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t colon = item.find(':');
    if (item.empty() || colon == std::string::npos || colon == 0)
      throw UserError(flag + ": expected model:batch[,model:batch...], got '" + item + "'");
    MeasureCase c;
    c.model = item.substr(0, colon);
    std::string b = item.substr(colon + 1);
    char* end = nullptr;
    c.batch = std::strtoll(b.c_str(), &end, 10);
    errno = 0;
    c.batch = std::strtoll(b.c_str(), &end, 10);
    if (b.empty() || *end != '\0' || errno == ERANGE || c.batch <= 0 || c.batch > 2147483647)
      throw UserError(flag + ": batch must be an integer in [1, 2147483647] in '" + item + "'");
    // An unknown model is a typo in the flag, not a row to skip after minutes of measuring.
    try {
      find_config_file("models", c.model, "model", "model");
    } catch (const FieldError& e) {
      throw UserError(flag + ": " + e.message());
    }
    out.push_back(c);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string check_backend_available(const std::string& backend) {
  bool registered = false;
  for (const auto& e : engine_registry()) registered = registered || e.name == backend;
  if (!registered)
    throw UnavailableError("measure " + backend + ": the " + backend +
                           " backend is not built into this xpusim (`xpusim backends` lists the engines)");
  Availability a = cached_engine(backend).availability();
  if (!a.available)
    throw UnavailableError("measure " + backend + ": the " + backend + " backend cannot run here" +
                           (a.reason.empty() ? std::string("") : ": " + a.reason));
  return cached_engine(backend).description();
}

std::string today_utc() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

namespace {

int resolved_count(const MeasureOptions& o) {
  return o.count > 0 ? o.count : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Shortest round-trip text of a double: a partial run read back is the same number.
std::string exact(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

constexpr const char* kPartial = " partial runs:";
constexpr const char* kFailed = " run failed: ";

}  // namespace

std::string measure_inputs_fingerprint(const MeasureOptions& o) {
  Fingerprint f;
  f.add("kind", "measured rows v1").add("xpusim", XPUSIM_VERSION).add("backend", o.backend);
  f.add("backend_version", o.backend_version).add("device", o.device).add("setup", o.setup);
  f.add("count", std::to_string(resolved_count(o))).add("steps", std::to_string(o.steps));
  f.add("warmup", std::to_string(o.warmup)).add("repeats", std::to_string(std::max(1, o.repeats)));
  for (const auto& c : o.cases) {
    f.add("case", c.model + ":" + std::to_string(c.batch));
    // The model's YAML: an edited model is another measurement.
    try {
      const std::string path = find_config_file("models", c.model, "model", "model");
      std::ifstream in(path, std::ios::binary);
      f.add("model file", std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
    } catch (const UserError&) {
      f.add("model file", "");  // unknown here; measuring it reports why on its row
    }
  }
  return f.hex();
}

std::string row_inputs_fingerprint(const ReferenceRow& r) {
  const size_t at = r.note.find(" inputs=");
  if (at == std::string::npos) return "";
  const size_t from = at + 8;
  return r.note.substr(from, r.note.find(' ', from) - from);
}

std::string row_measured_cpu(const ReferenceRow& r) {
  const size_t at = r.note.find(" cpu=");
  if (at == std::string::npos) return "";
  const size_t from = at + 5;
  // The description holds spaces; the note's next field (the backend) ends it.
  const size_t end = r.note.find(" backend=", from);
  return r.note.substr(from, end == std::string::npos ? std::string::npos : end - from);
}

HostCpuMismatch host_cpu_mismatch(const std::vector<ReferenceRow>& rows, const std::string& this_cpu) {
  HostCpuMismatch m;
  for (const auto& r : rows) {
    if (r.device != "host") continue;
    const std::string cpu = row_measured_cpu(r);
    if (cpu.empty() || cpu == this_cpu) continue;
    if (m.rows++ == 0) m.cpu = cpu;
  }
  return m;
}

MeasureRun measure(const MeasureOptions& o) {
  const int count = resolved_count(o);
  const int repeats = std::max(1, o.repeats);
  const std::string inputs = measure_inputs_fingerprint(o);
  const std::string base_note = "steps=" + std::to_string(o.steps) + " warmup=" + std::to_string(o.warmup) +
                                " threads=" + std::to_string(count) + " inputs=" + inputs;
  MeasureRun run;
  std::vector<ReferenceRow>& out = run.rows;
  std::vector<std::vector<double>> values(o.cases.size());
  std::vector<std::string> failures(o.cases.size()), versions(o.cases.size());
  std::vector<char> kept(o.cases.size(), 0);  // finished in the earlier run: its row as it was
  for (const auto& c : o.cases) {
    ReferenceRow r;
    r.line = static_cast<int>(out.size()) + 2;  // its line in the CSV these rows are written to
    r.source = (o.command.empty() ? "xpusim " + o.backend + " measurement" : o.command) + ", " + o.date + ", xpusim " +
               XPUSIM_VERSION;
    r.device = o.device;
    r.num_devices = count;
    r.setup = o.setup;
    r.framework = "xpusim-" + o.backend;
    r.model = c.model;
    r.batch_per_device = c.batch;
    r.precision = "fp32";
    r.data = "synthetic";
    r.metric = "train_throughput";
    r.unit = "samples/s";
    out.push_back(r);
  }
  if (!o.resume.empty()) {
    if (o.resume.size() != o.cases.size())
      throw UserError("the earlier measurement has " + std::to_string(o.resume.size()) + " rows for " +
                      std::to_string(o.cases.size()) + " cases");
    for (size_t k = 0; k < o.cases.size(); ++k) {
      const ReferenceRow& prev = o.resume[k];
      const std::string where = "line " + std::to_string(prev.line) + ": ";
      if (prev.model != o.cases[k].model || prev.batch_per_device != o.cases[k].batch)
        throw UserError(where + "row is " + prev.model + " at batch " + std::to_string(prev.batch_per_device.value_or(0)) +
                        ", case " + std::to_string(k + 1) + " is " + o.cases[k].model + ":" +
                        std::to_string(o.cases[k].batch));
      if (row_inputs_fingerprint(prev) != inputs)
        throw UserError(where + "measured with other inputs (inputs=" + row_inputs_fingerprint(prev) + ", not " + inputs + ")");
      const size_t partial = prev.note.find(kPartial);
      if (prev.value || prev.note.find(kFailed) != std::string::npos) {
        const int line = out[k].line;
        out[k] = prev;
        out[k].line = line;
        kept[k] = 1;
        ++run.resumed_cases;
      } else if (partial != std::string::npos) {
        // " partial runs: V1 V2 |VERSIONS": the runs done so far and what the backend reported.
        const size_t bar_at = prev.note.find(" |", partial);
        std::istringstream vs(prev.note.substr(partial + std::strlen(kPartial),
                                               bar_at == std::string::npos ? std::string::npos
                                                                           : bar_at - partial - std::strlen(kPartial)));
        std::string tok;
        while (vs >> tok) {
          double v = 0;
          auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
          if (ec != std::errc() || end != tok.data() + tok.size())
            throw UserError(where + "note: '" + tok + "' is not a measured run");
          values[k].push_back(v);
        }
        if (static_cast<int>(values[k].size()) >= repeats) throw UserError(where + "note: more partial runs than repeats");
        if (bar_at != std::string::npos) versions[k] = prev.note.substr(bar_at + 2);
      }
    }
  }
  auto rows_now = [&] {
    std::vector<ReferenceRow> rows = out;
    for (size_t k = 0; k < rows.size(); ++k) {
      if (kept[k]) continue;
      std::string note = base_note;
      if (!failures[k].empty()) {
        note += kFailed + failures[k];
      } else if (static_cast<int>(values[k].size()) == repeats) {
        rows[k].value = median_of(values[k]);
        note += " repeats=" + std::to_string(values[k].size()) + " median of";
        for (double v : values[k]) note.append(" ").append(fmt_g(v, 6));
        note += versions[k];
        if (!o.backend_version.empty()) note += " backend=" + o.backend_version;
      } else {
        note += kPartial;
        for (double v : values[k]) note.append(" ").append(exact(v));
        note.append(" |").append(versions[k]);
      }
      rows[k].note = note;
    }
    return rows;
  };

  run.runs_total = static_cast<long long>(o.cases.size()) * repeats;
  ProgressBar bar("measure " + o.backend, run.runs_total, o.progress);
  long long done = 0;
  // Rounds run every case once, so a slow spell of a shared machine hits one run of several
  // cases rather than every run of one case; the row keeps the median of its runs.
  for (int round = 0; round < repeats && !run.interrupted; ++round) {
    for (size_t k = 0; k < o.cases.size(); ++k) {
      const auto& c = o.cases[k];
      ReferenceRow& r = out[k];
      if (kept[k] || !failures[k].empty() || static_cast<int>(values[k].size()) > round) {
        bar.update(++done, c.model);
        continue;
      }
      if (o.stop && o.stop->load()) {
        run.interrupted = true;
        break;
      }
      try {
        r.dataset = find_model(c.model).dataset;
        PredictRequest q;
        q.model = c.model;
        q.batch_per_device = c.batch;
        q.precision = r.precision;
        q.engine = o.backend;
        q.placement.device = o.backend;
        q.placement.count = o.backend == "cpu" ? 1 : count;
        q.threads = o.backend == "cpu" ? count : 0;
        q.steps = o.steps;
        q.warmup = o.warmup;
        StepReport rep = o.predict ? o.predict(q) : predict(q);
        values[k].push_back(rep.throughput_samples_per_s);
        if (values[k].size() == 1) {
          // Versions the backend reports (library builds, driver) travel with the row.
          std::string v;
          for (auto it = rep.extra.begin(); it != rep.extra.end(); ++it)
            if (it.value().is_string() && it.key().find("version") != std::string::npos)
              v += " " + it.key() + "=" + it.value().get<std::string>();
          if (!rep.device.empty()) v += " measured_on=" + rep.device;
          // The CPU the row ran on, so a later validation elsewhere can pin its figures
          // (the `host` device is whatever machine predicts).
          if (o.backend == "cpu") v += " cpu=" + analytical::describe_host_cpu(analytical::detect_host_cpu());
          versions[k] = v;
        }
      } catch (const std::exception& e) {
        failures[k] = e.what();
      }
      ++run.runs_done;
      bar.update(++done, c.model);
      if (o.on_run) o.on_run(rows_now());
    }
  }
  bar.finish(run.interrupted ? "interrupted" : "");
  run.rows = rows_now();
  for (size_t k = 0; k < run.rows.size(); ++k)
    if (kept[k] || !failures[k].empty() || static_cast<int>(values[k].size()) == repeats) ++run.finished_cases;
  return run;
}

std::vector<ReferenceRow> measure_rows(const MeasureOptions& o) { return measure(o).rows; }

}  // namespace xpusim::validation
