#include "validation/measure.hpp"

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <ctime>
#include <thread>

#include "common/error.hpp"
#include "common/output.hpp"
#include "common/progress.hpp"
#include "common/stats.hpp"
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

std::vector<ReferenceRow> measure_rows(const MeasureOptions& o) {
  int count = o.count > 0 ? o.count : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int repeats = std::max(1, o.repeats);
  std::vector<ReferenceRow> out;
  std::vector<std::vector<double>> values(o.cases.size());
  std::vector<std::string> failures(o.cases.size()), versions(o.cases.size());
  for (const auto& c : o.cases) {
    ReferenceRow r;
    r.line = static_cast<int>(out.size()) + 2;  // its line in the CSV these rows are written to
    r.source = "xpusim validate --measure " + o.backend + ", " + o.date + ", xpusim " + XPUSIM_VERSION;
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
  ProgressBar bar("measure " + o.backend, static_cast<long long>(o.cases.size()) * repeats, o.progress);
  long long done = 0;
  // Rounds run every case once, so a slow spell of a shared machine hits one run of several
  // cases rather than every run of one case; the row keeps the median of its runs.
  for (int round = 0; round < repeats; ++round) {
    for (size_t k = 0; k < o.cases.size(); ++k) {
      const auto& c = o.cases[k];
      ReferenceRow& r = out[k];
      if (!failures[k].empty()) {
        bar.update(++done, c.model);
        continue;
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
        if (round == 0) {
          // Versions the backend reports (library builds, driver) travel with the row.
          std::string v;
          for (auto it = rep.extra.begin(); it != rep.extra.end(); ++it)
            if (it.value().is_string() && it.key().find("version") != std::string::npos)
              v += " " + it.key() + "=" + it.value().get<std::string>();
          if (!rep.device.empty()) v += " measured_on=" + rep.device;
          versions[k] = v;
        }
      } catch (const std::exception& e) {
        failures[k] = e.what();
      }
      bar.update(++done, c.model);
    }
  }
  bar.finish();
  for (size_t k = 0; k < out.size(); ++k) {
    std::string note = "steps=" + std::to_string(o.steps) + " warmup=" + std::to_string(o.warmup) +
                       " threads=" + std::to_string(count);
    if (failures[k].empty() && !values[k].empty()) {
      out[k].value = median_of(values[k]);
      note += " repeats=" + std::to_string(values[k].size()) + " median of";
      for (double v : values[k]) note += " " + fmt_g(v, 6);
      note += versions[k];
      if (!o.backend_version.empty()) note += " backend=" + o.backend_version;
    } else {
      note += " run failed: " + failures[k];
    }
    out[k].note = note;
  }
  return out;
}

}  // namespace xpusim::validation
