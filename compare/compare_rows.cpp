// Row files of `xpusim compare --out FILE`: every field of every row, numbers in their
// shortest round-trip form, so that rows read back for --resume are the same doubles and a
// resumed run prints byte for byte what an uninterrupted one does. See compare.hpp.
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string_view>

#include "common/crc32c.hpp"
#include "common/file_guard.hpp"
#include "common/checked_io.hpp"
#include "common/csv.hpp"
#include "common/config_paths.hpp"
#include "common/error.hpp"
#include "common/fingerprint.hpp"
#include "models/task.hpp"
#include "common/version.hpp"
#include "compare/compare.hpp"

namespace xpusim::cost {

namespace {

// v2 (issue 31): the monitoring columns gpu_util_pct_smi ... cpu_util_pct. A v1 file is named as
// an older xpusim's, not as a broken file.
constexpr const char* kCsvMagic = "# xpusim compare rows v2";
constexpr const char* kCsvMagicV1 = "# xpusim compare rows v1";
constexpr int kRowFileVersion = 2;

std::string exact(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

// One column: how a row shows it (empty = null) and how a cell sets it back.
struct Column {
  const char* name;
  std::function<std::string(const CompareRow&)> get;
  std::function<void(CompareRow&, const std::string&)> set;  // cell text; "" = null
};

double parse_double(const std::string& s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) throw UserError("'" + s + "' is not a number");
  return v;
}
long long parse_int(const std::string& s) {
  long long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) throw UserError("'" + s + "' is not an integer");
  return v;
}

Column str(const char* n, std::string CompareRow::*m) {
  return {n, [m](const CompareRow& r) { return r.*m; }, [m](CompareRow& r, const std::string& v) { r.*m = v; }};
}
Column opt(const char* n, std::optional<double> CompareRow::*m) {
  return {n, [m](const CompareRow& r) { return (r.*m) ? exact(*(r.*m)) : std::string(); },
          [m](CompareRow& r, const std::string& v) {
            if (v.empty()) r.*m = std::nullopt;
            else r.*m = parse_double(v);
          }};
}

const std::vector<Column>& columns() {
  static const std::vector<Column> cols = {
      str("option", &CompareRow::option),
      str("target", &CompareRow::target),
      str("model", &CompareRow::model),
      str("dataset", &CompareRow::dataset),
      str("device", &CompareRow::device),
      {"count", [](const CompareRow& r) { return std::to_string(r.count); },
       [](CompareRow& r, const std::string& v) { r.count = static_cast<int>(parse_int(v)); }},
      str("system", &CompareRow::system),
      str("precision", &CompareRow::precision),
      {"task", [](const CompareRow& r) { return std::string(task_name(r.task)); },
       [](CompareRow& r, const std::string& v) {
         if (v.empty()) r.task = Task::train;  // JSON rows carry it only for inference
         else if (!parse_task(v, r.task)) throw UserError("unknown task '" + v + "'");
       }},
      str("data", &CompareRow::data),
      {"batch_per_device", [](const CompareRow& r) { return std::to_string(r.batch_per_device); },
       [](CompareRow& r, const std::string& v) { r.batch_per_device = parse_int(v); }},
      {"global_batch", [](const CompareRow& r) { return std::to_string(r.global_batch); },
       [](CompareRow& r, const std::string& v) { r.global_batch = parse_int(v); }},
      str("offer", &CompareRow::offer),
      str("pricing", &CompareRow::pricing),
      str("offer_date", &CompareRow::offer_date),
      str("offer_source", &CompareRow::offer_source),
      {"offer_instances", [](const CompareRow& r) { return std::to_string(r.offer_instances); },
       [](CompareRow& r, const std::string& v) { r.offer_instances = static_cast<int>(parse_int(v)); }},
      str("offer_choice", &CompareRow::offer_choice),
      str("throughput_source", &CompareRow::throughput_source),
      str("target_metric", &CompareRow::target_metric),
      {"target_accuracy", [](const CompareRow& r) { return r.target_accuracy > 0 ? exact(r.target_accuracy) : ""; },
       [](CompareRow& r, const std::string& v) { r.target_accuracy = v.empty() ? 0 : parse_double(v); }},
      str("convergence_curve", &CompareRow::curve),
      opt("throughput_samples_per_s", &CompareRow::throughput_samples_per_s),
      opt("throughput_tokens_per_s", &CompareRow::throughput_tokens_per_s),
      opt("price_usd_per_h", &CompareRow::price_usd_per_h),
      opt("samples_per_s_per_usd_per_h", &CompareRow::samples_per_s_per_usd_per_h),
      opt("epochs_to_target", &CompareRow::epochs_to_target),
      opt("hours_to_target", &CompareRow::hours_to_target),
      opt("billed_hours", &CompareRow::billed_hours),
      opt("cost_to_target_usd", &CompareRow::cost_to_target_usd),
      opt("power_w", &CompareRow::power_w),
      str("power_source", &CompareRow::power_source),
      opt("energy_kwh", &CompareRow::energy_kwh),
      opt("breakeven_runs", &CompareRow::breakeven_runs),
      opt("gpu_util_pct_smi", &CompareRow::gpu_util_pct_smi),
      opt("gpu_mem_used_bytes", &CompareRow::gpu_mem_used_bytes),
      opt("gpu_power_w", &CompareRow::gpu_power_w),
      opt("cpu_util_pct", &CompareRow::cpu_util_pct),
      str("bottleneck", &CompareRow::bottleneck),
      str("error", &CompareRow::error),
      str("note", &CompareRow::note),
  };
  return cols;
}

}  // namespace

std::string compare_inputs_fingerprint(const Study& s) {
  auto read = [](const std::string& path) { return read_input_file(path, kMaxTextInputBytes); };
  Fingerprint f;
  f.add("kind", "compare rows v2").add("xpusim", xpusim_version()).add("study", read(s.file));
  // Every configuration file (devices, systems, models, prices, convergence curves, framework
  // profiles) a row can depend on, in a fixed order: an edited price or device file changes
  // rows, so it must not be mixed with rows computed before the edit. Paths are relative, so
  // a moved checkout or an installed copy of the same files still matches.
  namespace fs = std::filesystem;
  const fs::path root = config_dir();
  std::error_code ec;
  std::vector<std::string> files;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file(ec)) files.push_back(fs::relative(it->path(), root, ec).generic_string());
  std::sort(files.begin(), files.end());
  for (const auto& rel : files) f.add("config " + rel, read((root / rel).string()));
  return f.hex();
}

namespace {

// CRC-32C of the rows as their columns' texts: --resume keeps the rows of the file, so an
// edited number or a reordered row must not pass for the earlier run's (issue 34).
std::string rows_digest(const std::vector<CompareRow>& rows) {
  uint32_t crc = 0;
  for (const auto& row : rows) {
    for (const auto& c : columns()) {
      const std::string t = c.get(row);
      crc = crc32c(crc, t.data(), t.size());
      crc = crc32c(crc, "\x1f", 1);
    }
    crc = crc32c(crc, "\x1e", 1);
  }
  return crc32c_hex(crc);
}

std::string digest_problem(const std::string& path, const std::string& stated, const std::vector<CompareRow>& rows) {
  if (stated.empty())
    return path + ": the rows carry no checksum (rows_crc32c): written by an older xpusim or edited; run without "
                  "resume";
  if (stated != rows_digest(rows))
    return path + ": the rows do not match their checksum (rows_crc32c " + stated +
           "): edited or reordered since compare wrote them; run without resume";
  return "";
}

}  // namespace

void write_compare_rows(std::ostream& os, const CompareResult& r, OutputFormat f, const std::string& inputs,
                        bool complete) {
  if (f == OutputFormat::json) {
    nlohmann::json j = r.to_json();
    j["row_file"] = {{"version", kRowFileVersion}, {"inputs", inputs}, {"complete", complete}, {"rows_crc32c", rows_digest(r.rows)}};
    print_json(os, j);
    return;
  }
  os << kCsvMagic << " inputs=" << inputs << " complete=" << (complete ? "true" : "false")
     << " rows_crc32c=" << rows_digest(r.rows) << "\n";
  const char* sep = "";
  for (const auto& c : columns()) {
    os << sep << c.name;
    sep = ",";
  }
  os << "\n";
  for (const auto& row : r.rows) {
    sep = "";
    for (const auto& c : columns()) {
      os << sep << csv_escape(c.get(row));
      sep = ",";
    }
    os << "\n";
  }
}

CompareRowFile read_compare_rows(const std::string& path, OutputFormat f) {
  std::string text = read_input_file(path, kMaxTextInputBytes);
  require_utf8(text, path);
  CompareRowFile out;
  if (f == OutputFormat::json) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw UserError(path + ": not a compare row file: " + e.what());
    }
    if (!j.is_object() || !j.contains("row_file") || !j["row_file"].is_object() || !j.contains("rows") ||
        !j["rows"].is_array())
      throw UserError(path + ": not a compare row file (the JSON row file of a compare run has row_file and rows)");
    const auto& meta = j["row_file"];
    const int version = meta.value("version", 0);
    if (version == 1)
      throw UserError(path + ": a row file of an older xpusim (version 1, before the monitoring columns): its rows "
                      "cannot be resumed");
    if (version != kRowFileVersion)
      throw UserError(path + ": row file version is not " + std::to_string(kRowFileVersion));
    out.inputs = meta.value("inputs", "");
    out.complete = meta.value("complete", false);
    int k = 0;
    for (const auto& jr : j["rows"]) {
      ++k;
      CompareRow row;
      for (const auto& c : columns()) {
        // A row's JSON has throughput_tokens_per_s only for token-wise models and task only for
        // inference (CompareRow::to_json).
        const std::string_view name = c.name;  // compare text, not the literals' addresses
        if (jr.is_object() && !jr.contains(c.name) && (name == "throughput_tokens_per_s" || name == "task")) {
          c.set(row, "");
          continue;
        }
        if (!jr.is_object() || !jr.contains(c.name))
          throw UserError(path + ": row " + std::to_string(k) + ": no " + c.name);
        const auto& v = jr[c.name];
        try {
          if (v.is_null()) c.set(row, "");
          else if (v.is_string()) c.set(row, v.get<std::string>());
          else if (v.is_number_integer()) c.set(row, std::to_string(v.get<long long>()));
          else if (v.is_number()) c.set(row, exact(v.get<double>()));
          else throw UserError("not a string or number");
        } catch (const UserError& e) {
          throw UserError(path + ": row " + std::to_string(k) + ": " + c.name + ": " + e.what());
        }
      }
      out.rows.push_back(row);
    }
    out.rows_problem = digest_problem(path, meta.value("rows_crc32c", ""), out.rows);
    return out;
  }
  std::vector<CsvRecord> recs = parse_csv(text, path);
  const std::string magic = kCsvMagic;
  if (!recs.empty() && recs[0].fields.size() == 1 && recs[0].fields[0].rfind(std::string(kCsvMagicV1) + " ", 0) == 0)
    throw UserError(path + ":1: a row file of an older xpusim (compare rows v1, before the monitoring columns): its "
                    "rows cannot be resumed");
  if (recs.empty() || recs[0].fields.size() != 1 || recs[0].fields[0].rfind(magic + " ", 0) != 0)
    throw UserError(path + ":1: not a compare row file (its first line is not '" + magic + " inputs=... complete=...')");
  std::istringstream meta(recs[0].fields[0].substr(magic.size()));
  std::string word, digest;
  while (meta >> word) {
    if (word.rfind("inputs=", 0) == 0) out.inputs = word.substr(7);
    else if (word.rfind("complete=", 0) == 0) out.complete = word.substr(9) == "true";
    else if (word.rfind("rows_crc32c=", 0) == 0) digest = word.substr(12);
  }
  const auto& cols = columns();
  if (recs.size() < 2 || recs[1].fields.size() != cols.size())
    throw UserError(path + ":2: not the header of a compare row file");
  for (size_t c = 0; c < cols.size(); ++c)
    if (recs[1].fields[c] != cols[c].name)
      throw UserError(path + ":2: column " + std::to_string(c + 1) + " is '" + recs[1].fields[c] + "', expected '" +
                      cols[c].name + "'");
  for (size_t k = 2; k < recs.size(); ++k) {
    const int line = recs[k].line;
    const std::vector<std::string>& fields = recs[k].fields;
    if (fields.size() == 1 && fields[0].empty()) continue;  // a blank line
    if (fields.size() != cols.size())
      throw UserError(path + ":" + std::to_string(line) + ": " + std::to_string(fields.size()) + " fields, expected " +
                      std::to_string(cols.size()));
    CompareRow row;
    for (size_t c = 0; c < cols.size(); ++c) {
      try {
        cols[c].set(row, fields[c]);
      } catch (const UserError& e) {
        throw UserError(path + ":" + std::to_string(line) + ": " + cols[c].name + ": " + e.what());
      }
    }
    out.rows.push_back(row);
  }
  out.rows_problem = digest_problem(path, digest, out.rows);
  return out;
}

}  // namespace xpusim::cost
