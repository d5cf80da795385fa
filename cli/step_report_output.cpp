#include "cli/step_report_output.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/records.hpp"

namespace xpusim::cli {

void print_step_report(std::ostream& os, const StepReport& r, OutputFormat f) {
  if (f == OutputFormat::json) {
    print_json_document(os, r.to_record());
    return;
  }
  if (f == OutputFormat::csv) {  // one row, the JSON's fields (utilization.mxu, per_op_s.Conv2D, ...)
    print_csv_records(os, nlohmann::json::array({r.to_record()}), {"engine", "device", "count", "system", "model"});
    return;
  }
  Table t({"field", "value"});
  t.right_align = {false, true};
  t.add({"engine", r.engine});
  t.add({"device", r.device});
  t.add({"system", r.system});
  t.add({"model", r.model});
  t.add({"precision", r.precision});
  t.add({"data", r.data});
  if (r.task == Task::inference) t.add({"task", task_name(r.task)});
  t.add({"count", std::to_string(r.count)});
  t.add({"batch_per_device", std::to_string(r.batch_per_device)});
  t.add({"global_batch", std::to_string(r.global_batch)});
  t.add({"step_time_s", fmt_sig(r.step_time_s, 5)});
  t.add({"throughput_samples_per_s", fmt_sig(r.throughput_samples_per_s, 5)});
  if (r.throughput_tokens_per_s > 0) t.add({"throughput_tokens_per_s", fmt_sig(r.throughput_tokens_per_s, 5)});
  t.add({"memory_bytes", std::to_string(r.memory_bytes) + " (" + fmt_bytes(r.memory_bytes) + ")"});
  t.add({"memory_capacity_bytes", std::to_string(r.memory_capacity_bytes)});
  t.add({"fits_in_memory", r.fits_in_memory ? "true" : "false"});
  if (r.power_w > 0) {
    t.add({"power_w", fmt_sig(r.power_w, 4)});
    t.add({"energy_per_step_j", fmt_sig(r.energy_per_step_j, 4)});
  }
  t.add({"bottleneck", resource_name(r.bottleneck)});
  std::map<std::string, double> by_name;  // sorted by name, as in the JSON
  for (const auto& [unit, u] : r.utilization) by_name[resource_name(unit)] = u;
  for (const auto& [unit, u] : by_name) t.add({"utilization." + unit, fmt_fixed(u, 3)});
  for (const auto& [kind, s] : r.per_op_s) t.add({"per_op_s." + kind, fmt_sig(s, 4)});
  // A long text (the detected host CPU) would widen the right-aligned value column for every
  // row: it goes below the table, one "field: text" line each.
  constexpr size_t kLongText = 60;
  std::vector<std::pair<std::string, std::string>> long_texts;
  for (auto it = r.extra.begin(); it != r.extra.end(); ++it) {
    if (!it.value().is_primitive()) continue;
    if (it.value().is_string() && it.value().get<std::string>().size() > kLongText)
      long_texts.emplace_back(it.key(), it.value().get<std::string>());
    else
      t.add({it.key(), it.value().is_string() ? it.value().get<std::string>() : it.value().dump()});
  }
  t.print(os, f);
  for (const auto& [key, text] : long_texts) os << key << ": " << text << "\n";
}

}  // namespace xpusim::cli
