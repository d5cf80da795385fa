// Output of a study: JSON and CSV (the same fields), and for reading a conclusion per target
// followed by a table that fits a terminal. Deterministic: fixed number formatting, rows in
// study order.
#include <algorithm>
#include <functional>

#include "common/records.hpp"
#include "compare/compare.hpp"
#include "compare/compare_summary.hpp"

namespace xpusim::cost {

namespace {

std::string opt_cell(const std::optional<double>& v, int sig) { return v ? fmt_sig(*v, sig) : ""; }
std::string usd_cell(const std::optional<double>& v) { return v ? fmt_fixed(*v, 2) : ""; }

// Short names for the table's bound column (the CSV/JSON keep the resource names).
std::string short_bound(const std::string& b) {
  if (b == "input_pipeline") return "input";
  if (b == "communication") return "comm";
  return b;
}

// Word-wraps a line to `width` columns; continuation lines are indented under the text.
std::string wrap(const std::string& line, size_t width) {
  if (line.size() <= width) return line;
  size_t indent = line.find_first_not_of(' ');
  if (indent == std::string::npos) indent = 0;
  const std::string pad(indent + 4, ' ');
  std::string out, cur;
  size_t pos = indent;
  cur = line.substr(0, indent);
  while (pos < line.size()) {
    size_t sp = line.find(' ', pos);
    std::string word = line.substr(pos, sp == std::string::npos ? std::string::npos : sp - pos);
    pos = sp == std::string::npos ? line.size() : sp + 1;
    if (cur.size() > pad.size() && cur.size() + 1 + word.size() > width) {
      out += cur + "\n";
      cur = pad + word;
    } else {
      cur += (cur.empty() || cur.back() == ' ' ? "" : " ") + word;
    }
  }
  return out + cur;
}

struct Column {
  std::string header;
  int priority;  // 0 = always shown; higher ones are dropped first when the table is too wide
  std::function<std::string(const CompareRow&)> cell;
};

}  // namespace

void print_compare(std::ostream& os, const CompareResult& r, OutputFormat f, const std::string& all_fields_hint) {
  if (f == OutputFormat::json) {
    print_json_document(os, r.to_json());
    return;
  }
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) rows.push_back(row.to_json());
  if (f == OutputFormat::csv) {
    print_csv_records(os, rows, {"option", "target", "throughput_samples_per_s", "price_usd_per_h",
                                 "epochs_to_target", "hours_to_target", "cost_to_target_usd", "energy_kwh"});
    return;
  }
  // Text and Markdown: the conclusion first, then the columns that hold a value in some row,
  // narrowed to kTerminalColumns by dropping the least important ones; notes as footnotes.
  constexpr size_t kTerminalColumns = 100;
  const bool md = f == OutputFormat::markdown;
  auto fit = [&](const std::string& line) { return md ? line : wrap(line, kTerminalColumns); };
  os << (md ? "## " : "") << fit(r.study + (r.description.empty() ? "" : ": " + r.description)) << "\n";
  if (!r.source.empty()) os << (md ? "\n" : "") << fit("source: " + r.source) << "\n";
  os << "\n";
  for (const auto& line : conclusion_lines(r, conclude(r), md)) os << fit(line) << "\n";

  std::vector<std::string> notes;
  std::vector<std::string> note_of(r.rows.size());
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const std::string& msg = r.rows[i].message();
    if (msg.empty()) continue;
    auto it = std::find(notes.begin(), notes.end(), msg);
    size_t k = static_cast<size_t>(it - notes.begin());
    if (it == notes.end()) notes.push_back(msg);
    note_of[i] = "[" + std::to_string(k + 1) + "]";
  }
  std::vector<Column> all = {
      {"option", 0, [](const CompareRow& x) { return x.option; }},
      {"target", 0, [](const CompareRow& x) { return x.target; }},
      {"samples/s", 0, [](const CompareRow& x) { return opt_cell(x.throughput_samples_per_s, 4); }},
      {"tokens/s", 1, [](const CompareRow& x) { return opt_cell(x.throughput_tokens_per_s, 4); }},
      {"USD/h", 0, [](const CompareRow& x) { return usd_cell(x.price_usd_per_h); }},
      {"epochs", 2, [](const CompareRow& x) { return opt_cell(x.epochs_to_target, 3); }},
      {"hours", 0, [](const CompareRow& x) { return opt_cell(x.hours_to_target, 3); }},
      {"USD", 0, [](const CompareRow& x) { return usd_cell(x.cost_to_target_usd); }},
      {"kWh", 3, [](const CompareRow& x) { return opt_cell(x.energy_kwh, 3); }},
      {"breakeven_runs", 1, [](const CompareRow& x) { return opt_cell(x.breakeven_runs, 3); }},
      {"bound", 1, [](const CompareRow& x) { return short_bound(x.bottleneck); }},
  };
  // Cells per column; a column empty in every row is not shown.
  std::vector<Column> cols;
  std::vector<std::vector<std::string>> cells;
  for (const auto& c : all) {
    std::vector<std::string> v;
    bool any = false;
    for (const auto& row : r.rows) {
      v.push_back(c.cell(row));
      any = any || !v.back().empty();
    }
    if (!any) continue;
    cols.push_back(c);
    cells.push_back(v);
  }
  if (!notes.empty()) {
    cols.push_back({"note", 0, {}});
    cells.push_back(note_of);
  }
  auto width = [&] {
    size_t w = 0;
    for (size_t c = 0; c < cols.size(); ++c) {
      size_t cw = cols[c].header.size();
      for (const auto& s : cells[c]) cw = std::max(cw, s.size());
      w += cw + (c ? 2 : 0);
    }
    return w;
  };
  for (int prio = 3; prio >= 1 && width() > kTerminalColumns; --prio)
    for (size_t c = cols.size(); c-- > 0;)
      if (cols[c].priority == prio && width() > kTerminalColumns) {
        cols.erase(cols.begin() + static_cast<long>(c));
        cells.erase(cells.begin() + static_cast<long>(c));
      }
  std::vector<std::string> headers;
  for (const auto& c : cols) headers.push_back(c.header);
  Table t(headers);
  for (size_t i = 0; i < r.rows.size(); ++i) {
    std::vector<std::string> line;
    for (const auto& c : cells) line.push_back(c[i]);
    t.add(line);
  }
  t.print(os, f);
  if (!notes.empty()) os << "\n";
  for (size_t k = 0; k < notes.size(); ++k)
    os << fit("[" + std::to_string(k + 1) + "] " + notes[k]) << (md ? "  " : "") << "\n";
  // `offer: cheapest`: which offer each such option got, with its date and source (once per option).
  std::vector<std::string> chosen;
  for (const auto& row : r.rows)
    if (!row.offer_choice.empty()) {
      const std::string line = "offer of " + row.option + ": " + row.offer_choice;
      if (std::find(chosen.begin(), chosen.end(), line) == chosen.end()) chosen.push_back(line);
    }
  if (!chosen.empty() && notes.empty()) os << "\n";
  for (const auto& line : chosen) os << fit(line) << (md ? "  " : "") << "\n";
  os << (md ? "\n" : "") << "All fields (hours, billed hours, energy, curves, bottlenecks): "
     << (all_fields_hint.empty() ? std::string("the CSV and JSON outputs") : all_fields_hint) << ".\n";
}

}  // namespace xpusim::cost
