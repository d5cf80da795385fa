#include "common/records.hpp"

#include <charconv>
#include <cmath>
#include <map>

#include "common/csv.hpp"
#include "common/output.hpp"
#include "common/version.hpp"

namespace xpusim {

nlohmann::json output_document(nlohmann::json body) {
  body["schema_version"] = kOutputSchemaVersion;
  body["xpusim_version"] = xpusim_version();
  return body;
}

void print_json_document(std::ostream& os, const nlohmann::json& body) { print_json(os, output_document(body)); }

std::string fmt_roundtrip(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  if (v == 0) return "0";  // also -0: one spelling
  char buf[64];
  // Integral values print as integers (as JSON writes integers), the rest shortest round-trip.
  if (std::fabs(v) < 9007199254740992.0 && std::trunc(v) == v) {
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, static_cast<long long>(v));
    return ec == std::errc() ? std::string(buf, end) : std::string();
  }
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::string();
}

namespace {

std::string scalar_cell(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null: return "";
    case nlohmann::json::value_t::boolean: return v.get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::number_integer: return std::to_string(v.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: return std::to_string(v.get<uint64_t>());
    case nlohmann::json::value_t::number_float: return fmt_roundtrip(v.get<double>());
    case nlohmann::json::value_t::string: return v.get<std::string>();
    default: return v.dump();  // arrays of scalars: their JSON text in one cell
  }
}

// An array of objects is the rows of another table; an empty array is treated alike (its
// column would otherwise come and go with the data).
bool array_of_objects(const nlohmann::json& v) {
  if (!v.is_array()) return false;
  for (const auto& e : v)
    if (!e.is_object()) return false;
  return true;
}

void flatten_into(const nlohmann::json& obj, const std::string& prefix, std::vector<FlatField>& out) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string col = prefix + it.key();
    const nlohmann::json& v = it.value();
    if (v.is_object()) flatten_into(v, col + ".", out);
    else if (array_of_objects(v)) continue;  // rows of another table
    else out.push_back({col, scalar_cell(v)});
  }
}

}  // namespace

std::vector<FlatField> flatten_record(const nlohmann::json& record) {
  std::vector<FlatField> out;
  if (record.is_object()) flatten_into(record, "", out);
  return out;
}

void print_csv_records(std::ostream& os, const nlohmann::json& records,
                       const std::vector<std::string>& leading) {
  std::vector<std::vector<FlatField>> flat;
  for (const auto& r : records) flat.push_back(flatten_record(r));
  std::vector<std::string> cols;
  std::map<std::string, size_t> index;
  auto add_col = [&](const std::string& c) {
    if (index.emplace(c, cols.size()).second) cols.push_back(c);
  };
  for (const auto& c : leading)
    for (const auto& f : flat)
      for (const auto& x : f)
        if (x.column == c) add_col(c);
  for (const auto& f : flat)
    for (const auto& x : f) add_col(x.column);
  write_csv_record(os, cols);
  for (const auto& f : flat) {
    std::vector<std::string> cells(cols.size());
    for (const auto& x : f) cells[index.at(x.column)] = x.cell;
    write_csv_record(os, cells);
  }
}

}  // namespace xpusim
