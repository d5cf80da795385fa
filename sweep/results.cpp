// Point evaluation (predict() + the cost model's cost_to_target), row formatting and parsing, the
// Pareto front, the summary and its chart.
#include "sweep/results.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <regex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/csv.hpp"
#include "common/error.hpp"
#include "common/output.hpp"
#include "common/records.hpp"
#include "common/version.hpp"
#include "costmodel/target_cost.hpp"
#include "sweep/plan_point.hpp"
#include "validation/graph_cache.hpp"
#include "common/svg_chart.hpp"

namespace xpusim::sweep {

namespace {

// Integers (batches, bytes) print in full; other numbers in the shortest text that reads back
// to the same double (common/records.hpp, as every command's CSV), so the summary, which reads
// the row file back, sees the computed values and fresh and resumed runs agree.
std::string fmt_num(double v) { return fmt_roundtrip(v); }

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

// JSONL types a request value by its text: an integer literal is an integer, another JSON
// number literal a double, true/false a boolean, empty null, anything else a string. The
// column's text is canonical (canonical_value) so that the typed value reads back to it.
nlohmann::ordered_json typed_value(const std::string& v) {
  static const std::regex integer("-?(0|[1-9][0-9]{0,17})");
  static const std::regex number("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?");
  if (v.empty()) return nullptr;
  if (v == "true" || v == "false") return v == "true";
  if (std::regex_match(v, integer)) return std::stoll(v);
  if (std::regex_match(v, number)) {
    const double d = std::strtod(v.c_str(), nullptr);
    if (std::isfinite(d)) return d;
  }
  return v;
}

// The text a typed JSON value stands for (the inverse of typed_value on canonical texts).
std::string value_text(const nlohmann::json& j) {
  if (j.is_null()) return "";
  if (j.is_boolean()) return j.get<bool>() ? "true" : "false";
  if (j.is_number_integer()) return std::to_string(j.get<long long>());
  if (j.is_number_unsigned()) return std::to_string(j.get<unsigned long long>());
  if (j.is_number_float()) return fmt_num(j.get<double>());
  return j.get<std::string>();
}

nlohmann::ordered_json text_or_null(const std::string& v) {
  return v.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(v);
}

}  // namespace

std::string canonical_value(const std::string& v) {
  const nlohmann::ordered_json j = typed_value(v);
  return j.is_number_float() ? fmt_num(j.get<double>()) : v;
}

namespace {

// The value of each column for a point: fixed first, then axes (later wins).
std::vector<std::string> request_values(const SweepSpec& s, const Point& p) {
  std::map<std::string, std::string> eff;
  for (const auto& [k, v] : s.fixed) eff[k] = v;
  for (size_t a = 0; a < s.axes.size(); ++a)
    for (const auto& [k, v] : s.axes[a].values[p.choice[a]]) eff[k] = v;
  std::vector<std::string> out;
  for (const auto& c : s.columns) out.push_back(eff.count(c) ? canonical_value(eff[c]) : "");
  return out;
}

double oriented(const PointResult& r, const Objective& o) {
  double v = r.values.at(o.field);
  return o.maximize ? -v : v;
}

bool has_all(const PointResult& r, const std::vector<Objective>& objs) {
  if (r.status != "ok") return false;
  for (const auto& o : objs)
    if (!r.values.count(o.field) || !std::isfinite(r.values.at(o.field))) return false;
  return true;
}

}  // namespace

namespace {

// Constraints: the first bound a result breaks makes the point infeasible, the reason first in its note.
void apply_bounds(const SweepSpec& s, PointResult& r) {
  for (const auto& b : s.bounds) {
    auto it = r.values.find(b.field);
    std::string why;
    if (it == r.values.end())
      why = b.field + " unknown (constraint " + (b.is_max ? "max " : "min ") + fmt_num(b.limit) + ")";
    else if (b.is_max ? it->second > b.limit : it->second < b.limit)
      why = b.field + " " + fmt_g(it->second, 4) + (b.is_max ? " > max " : " < min ") + fmt_num(b.limit);
    if (!why.empty()) {
      r.status = "infeasible";
      r.note = r.note.empty() ? why : why + "; " + r.note;
      return;
    }
  }
}

}  // namespace

Evaluator::Evaluator() : predict_(validation::graph_caching_predictor()) {}

PointResult Evaluator::evaluate(const SweepSpec& s, const Point& p) {
  PointResult r;
  r.point = p.index;
  r.request = request_values(s, p);
  r.status = "ok";
  try {
    PointRequest req = request_for(s, p.choice);
    if (s.kind == PointKind::plan) {
      evaluate_plan(req, r);
      if (r.status == "ok") apply_bounds(s, r);
      r.note = one_line(r.note);
      return r;
    }
    StepReport rep = predict_(req.predict);
    r.engine = rep.engine;
    r.bottleneck = resource_name(rep.bottleneck);
    r.fits_in_memory = rep.fits_in_memory;
    r.values["memory_bytes"] = double(rep.memory_bytes);
    r.values["global_batch"] = double(rep.global_batch);
    if (!rep.fits_in_memory && s.require_fit) {
      r.status = "infeasible";
      r.note = "does not fit in device memory (" + fmt_bytes(rep.memory_bytes) + " of " +
               fmt_bytes(rep.memory_capacity_bytes) + ")";
      return r;
    }
    if (rep.step_time_s > 0) r.values["step_time_s"] = rep.step_time_s;
    if (rep.throughput_samples_per_s > 0) r.values["throughput_samples_per_s"] = rep.throughput_samples_per_s;
    if (rep.throughput_samples_per_s > 0) {
      // Priced by the cost function `xpusim compare` prices a study row with; without an offer
      // or a target it gives the power alone (the option's, else the modelled, else none).
      cost::StudyOption o;
      o.placement = req.predict.placement;
      o.precision = request_precision(req.predict);
      o.task = req.predict.task;
      o.batch_per_device = req.predict.batch_per_device;
      o.data = req.predict.data;
      o.offer = req.offer;
      cost::parse_tier(req.pricing, o.tier);
      if (req.offer == cost::kCheapestOffer) {
        const cost::OfferChoice ch = cheapest_point_offer(req);
        const cost::PriceOffer& off = cost::default_price_catalog().get(ch.id);
        o.offer = ch.id;
        o.offer_instances = ch.instances;
        put_offer_texts(ch.id, ch.instances, off.date, off.source, r);
      }
      o.power_w = req.power_w;
      std::optional<cost::StudyTarget> t = s.target;
      if (t) t->model = rep.model;
      cost::OptionSpeed speed;
      speed.samples_per_s = rep.throughput_samples_per_s;
      speed.global_batch = rep.global_batch;
      if (rep.power_w > 0) speed.modelled_power_w = rep.power_w;  // modelled: energy from it (docs/power.md)
      cost::TargetCost c = cost::cost_to_target(o, t ? &*t : nullptr, speed);
      auto put = [&](const char* k, const std::optional<double>& v) {
        if (v) r.values[k] = *v;
      };
      put("price_usd_per_h", c.usd_per_h);
      put("samples_per_s_per_usd_per_h", c.samples_per_s_per_usd_per_h);
      put("epochs_to_target", c.epochs);
      put("hours_to_target", c.hours);
      put("cost_to_target_usd", c.cost_usd);
      put("power_w", c.power_w);
      put("energy_kwh", c.energy_kwh);
      r.power_source = c.power_source;
      r.note = c.note;
    }
    apply_bounds(s, r);
  } catch (const std::exception& e) {
    r.status = "error";
    r.error = e.what();
  }
  r.note = one_line(r.note);
  r.error = one_line(r.error);
  return r;
}

std::vector<std::string> row_columns(const SweepSpec& s) {
  std::vector<std::string> c{"point"};
  c.insert(c.end(), s.columns.begin(), s.columns.end());
  c.push_back("status");
  c.push_back("engine");
  for (const auto& f : result_fields(s.kind)) c.push_back(f.key);
  for (const auto& f : row_text_fields(s)) c.push_back(f);
  c.push_back("fits_in_memory");
  if (s.kind == PointKind::predict) {  // a plan has neither: its step is closed-form, unpowered
    c.push_back("bottleneck");
    c.push_back("power_source");
  }
  c.push_back("note");
  c.push_back("error");
  return c;
}

std::string csv_header(const SweepSpec& s) {
  std::string line;
  for (const auto& c : row_columns(s)) line += (line.empty() ? "" : ",") + csv_escape(c);
  return line;
}

std::string format_row(const SweepSpec& s, const PointResult& r, RowFormat f) {
  std::string fits = r.fits_in_memory ? (*r.fits_in_memory ? "true" : "false") : "";
  if (f == RowFormat::csv) {
    std::string line = std::to_string(r.point);
    for (const auto& v : r.request) line += "," + csv_escape(v);
    line += "," + csv_escape(r.status) + "," + csv_escape(r.engine);
    for (const auto& fd : result_fields(s.kind)) {
      auto it = r.values.find(fd.key);
      line += "," + (it == r.values.end() ? std::string() : fmt_num(it->second));
    }
    for (const auto& t : row_text_fields(s)) {
      auto it = r.texts.find(t);
      line += "," + (it == r.texts.end() ? std::string() : csv_escape(it->second));
    }
    line += "," + fits;
    if (s.kind == PointKind::predict) line += "," + csv_escape(r.bottleneck) + "," + csv_escape(r.power_source);
    line += "," + csv_escape(one_line(r.note)) + "," + csv_escape(one_line(r.error));
    return line;
  }
  nlohmann::ordered_json j;
  j["point"] = r.point;
  for (size_t i = 0; i < s.columns.size(); ++i) j[s.columns[i]] = typed_value(r.request[i]);
  j["status"] = r.status;
  j["engine"] = text_or_null(r.engine);
  for (const auto& fd : result_fields(s.kind)) {
    auto it = r.values.find(fd.key);
    if (it == r.values.end()) {
      j[fd.key] = nullptr;
    } else {
      // The same rounding as CSV, so both formats hold the same numbers.
      std::string t = fmt_num(it->second);
      if (t.find_first_of(".eE") == std::string::npos) j[fd.key] = std::stoll(t);
      else j[fd.key] = std::stod(t);
    }
  }
  for (const auto& t : row_text_fields(s)) {
    auto it = r.texts.find(t);
    j[t] = it == r.texts.end() ? nlohmann::ordered_json(nullptr) : typed_value(it->second);
  }
  j["fits_in_memory"] = r.fits_in_memory ? nlohmann::ordered_json(*r.fits_in_memory) : nlohmann::ordered_json(nullptr);
  if (s.kind == PointKind::predict) {
    j["bottleneck"] = text_or_null(r.bottleneck);
    j["power_source"] = text_or_null(r.power_source);
  }
  j["note"] = text_or_null(one_line(r.note));
  j["error"] = text_or_null(one_line(r.error));
  return j.dump();
}

PointResult parse_row(const SweepSpec& s, const std::string& line, RowFormat f, const std::string& where) {
  PointResult r;
  const auto& fields = result_fields(s.kind);
  const auto texts = row_text_fields(s);
  const bool predict = s.kind == PointKind::predict;
  auto number = [&](const std::string& key, const std::string& text) {
    try {
      size_t used = 0;
      double v = std::stod(text, &used);
      if (used != text.size()) throw std::invalid_argument(text);
      return v;
    } catch (const std::exception&) {
      throw UserError(where + ": " + key + ": '" + text + "' is not a number");
    }
  };
  // A point index is a whole number in [0, 9e15] (exact in a double), in either format.
  auto point_index = [&](double point, const std::string& text) {
    if (point != std::floor(point) || point < 0 || point > 9e15)
      throw UserError(where + ": point: '" + text + "' is not a point index");
    return static_cast<long long>(point);
  };
  if (f == RowFormat::csv) {
    std::vector<std::string> c = parse_csv_line(line, where);
    const size_t want = row_columns(s).size();
    if (c.size() != want)
      throw UserError(where + ": " + std::to_string(c.size()) + " columns, expected " + std::to_string(want));
    size_t i = 0;
    r.point = point_index(number("point", c[i]), c[i]);
    ++i;
    for (size_t k = 0; k < s.columns.size(); ++k) r.request.push_back(c[i++]);
    r.status = c[i++];
    r.engine = c[i++];
    for (const auto& fd : fields) {
      const std::string& t = c[i++];
      if (!t.empty()) r.values[fd.key] = number(fd.key, t);
    }
    for (const auto& t : texts) {
      const std::string& v = c[i++];
      if (!v.empty()) r.texts[t] = v;
    }
    const std::string& fits = c[i++];
    if (!fits.empty() && fits != "true" && fits != "false")
      throw UserError(where + ": fits_in_memory: '" + fits + "' is not true, false or empty");
    if (!fits.empty()) r.fits_in_memory = fits == "true";
    if (predict) {
      r.bottleneck = c[i++];
      r.power_source = c[i++];
    }
    r.note = c[i++];
    r.error = c[i++];
  } else {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
      // Not get<long long>(): a float out of its range (a hand-edited 4e78) is undefined behaviour.
      const nlohmann::json& point = j.at("point");
      if (!point.is_number()) throw UserError(where + ": point: " + point.dump() + " is not a point index");
      r.point = point_index(point.get<double>(), point.dump());
      for (const auto& col : s.columns) r.request.push_back(value_text(j.at(col)));
      r.status = j.at("status").get<std::string>();
      r.engine = value_text(j.at("engine"));
      for (const auto& fd : fields)
        if (!j.at(fd.key).is_null()) r.values[fd.key] = j.at(fd.key).get<double>();
      for (const auto& t : texts)
        if (!j.at(t).is_null()) r.texts[t] = value_text(j.at(t));
      if (!j.at("fits_in_memory").is_null()) r.fits_in_memory = j.at("fits_in_memory").get<bool>();
      if (predict) {
        r.bottleneck = value_text(j.at("bottleneck"));
        r.power_source = value_text(j.at("power_source"));
      }
      r.note = value_text(j.at("note"));
      r.error = value_text(j.at("error"));
    } catch (const nlohmann::json::exception& e) {
      throw UserError(where + ": not a row of this sweep (" + std::string(e.what()) + ")");
    }
  }
  if (r.status != "ok" && r.status != "infeasible" && r.status != "error")
    throw UserError(where + ": status: '" + r.status + "' is not ok, infeasible or error");
  // Every result field is a finite quantity >= 0 (times, rates, bytes, prices, energy):
  // "nan", "inf" or a negative number was written by hand.
  for (const auto& [k, v] : r.values)
    if (!std::isfinite(v) || v < 0) throw UserError(where + ": " + k + ": " + fmt_num(v) + " is not a finite value >= 0");
  if (r.point < 0) throw UserError(where + ": point: " + std::to_string(r.point) + " is not a point index");
  return r;
}

std::vector<size_t> pareto_front(const std::vector<PointResult>& rows, const std::vector<Objective>& objs) {
  std::vector<size_t> cand;
  for (size_t i = 0; i < rows.size(); ++i)
    if (has_all(rows[i], objs)) cand.push_back(i);
  // Lexicographic order over the (minimised) objectives: a row can only be dominated by one
  // before it, and if by any row then by one already on the front (dominance is transitive).
  auto key_less = [&](size_t a, size_t b) {
    for (const auto& o : objs) {
      double x = oriented(rows[a], o), y = oriented(rows[b], o);
      if (x != y) return x < y;
    }
    return a < b;
  };
  std::sort(cand.begin(), cand.end(), key_less);
  std::vector<size_t> front;
  for (size_t c : cand) {
    bool dominated = false;
    for (size_t f : front) {
      bool all_le = true, one_lt = false;
      for (const auto& o : objs) {
        double x = oriented(rows[f], o), y = oriented(rows[c], o);
        if (x > y) {
          all_le = false;
          break;
        }
        if (x < y) one_lt = true;
      }
      if (all_le && one_lt) {
        dominated = true;
        break;
      }
    }
    if (!dominated) front.push_back(c);
  }
  std::sort(front.begin(), front.end());
  return front;
}

Summary summarize(const SweepSpec& s, const std::vector<PointResult>& rows) {
  Summary sum;
  sum.points = static_cast<long long>(rows.size());
  for (const auto& r : rows) {
    if (r.status == "ok") ++sum.ok;
    else if (r.status == "infeasible") ++sum.infeasible;
    else ++sum.errors;
  }
  sum.front = pareto_front(rows, s.objectives);
  for (const auto& o : s.objectives) {
    std::optional<size_t> best;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!has_all(rows[i], {o})) continue;
      if (!best || oriented(rows[i], o) < oriented(rows[*best], o)) best = i;
    }
    sum.best.emplace_back(o, best);
  }
  return sum;
}

namespace {

nlohmann::ordered_json row_json(const SweepSpec& s, const PointResult& r) {
  return nlohmann::ordered_json::parse(format_row(s, r, RowFormat::jsonl));
}

std::string describe(const SweepSpec& s, const PointResult& r) {
  std::string d;
  for (size_t i = 0; i < s.columns.size(); ++i)
    if (!r.request[i].empty()) d += (d.empty() ? "" : " ") + s.columns[i] + "=" + r.request[i];
  return d;
}

}  // namespace

void print_summary(std::ostream& os, const SweepSpec& s, const std::vector<PointResult>& rows, const Summary& sum,
                   bool json) {
  if (json) {
    nlohmann::ordered_json j;
    j["schema_version"] = kOutputSchemaVersion;
    j["xpusim_version"] = xpusim_version();
    j["sweep"] = s.name;
    j["sampling"] = sampling_name(s.sampling);
    j["points"] = sum.points;
    j["ok"] = sum.ok;
    j["infeasible"] = sum.infeasible;
    j["errors"] = sum.errors;
    j["objectives"] = nlohmann::ordered_json::array();
    for (const auto& o : s.objectives) j["objectives"].push_back({{"field", o.field}, {"goal", o.maximize ? "max" : "min"}});
    j["pareto_front"] = nlohmann::ordered_json::array();
    for (size_t i : sum.front) j["pareto_front"].push_back(row_json(s, rows[i]));
    j["best"] = nlohmann::ordered_json::object();
    for (const auto& [o, b] : sum.best) j["best"][o.field] = b ? row_json(s, rows[*b]) : nlohmann::ordered_json(nullptr);
    os << j.dump(2) << "\n";
    return;
  }
  os << "sweep " << s.name << ": " << sum.points << " points, " << sum.ok << " ok, " << sum.infeasible
     << " infeasible, " << sum.errors << " errors\n";
  std::vector<std::string> cols{"point"};
  cols.insert(cols.end(), s.columns.begin(), s.columns.end());
  std::string objs;
  for (const auto& o : s.objectives) {
    cols.push_back(o.field);
    objs += (objs.empty() ? "" : ", ") + o.field + " (" + (o.maximize ? "max" : "min") + ")";
  }
  os << "Pareto front over " << objs << ": " << sum.front.size() << " points\n";
  Table t(cols);
  for (size_t i : sum.front) {
    std::vector<std::string> row{std::to_string(rows[i].point)};
    row.insert(row.end(), rows[i].request.begin(), rows[i].request.end());
    for (const auto& o : s.objectives) row.push_back(fmt_sig(rows[i].values.at(o.field), 4));
    t.add(row);
  }
  t.print(os, OutputFormat::table);
  os << "best per objective:\n";
  for (const auto& [o, b] : sum.best) {
    os << "  " << o.field << " (" << (o.maximize ? "max" : "min") << "): ";
    if (!b) os << "no feasible point\n";
    else os << fmt_sig(rows[*b].values.at(o.field), 4) << " at point " << rows[*b].point << " (" << describe(s, rows[*b]) << ")\n";
  }
}

std::string summary_chart_svg(const SweepSpec& s, const std::vector<PointResult>& rows, const Summary& sum) {
  const bool two = s.objectives.size() >= 2;
  const Objective& oy = two ? s.objectives[1] : s.objectives[0];
  auto label = [&s](const std::string& key) {  // in words with the unit; the field name in the tooltip
    const ResultField* f = find_result_field(key, s.kind);
    return f ? f->title : key;
  };
  auto xy = [&](const PointResult& r) {
    return std::make_pair(two ? r.values.at(s.objectives[0].field) : double(r.point), r.values.at(oy.field));
  };
  std::vector<Objective> need(s.objectives.begin(), s.objectives.begin() + (two ? 2 : 1));
  // Series: the values of the first axis that varies, when it has few enough to tell apart.
  int axis = -1;
  for (size_t a = 0; a < s.axes.size(); ++a)
    if (s.axes[a].values.size() > 1) {
      axis = int(a);
      break;
    }
  const size_t max_series = 7;  // + the front = 8
  std::vector<SvgSeries> series;
  std::map<std::string, size_t> by_value;
  std::vector<size_t> axis_cols;  // the columns the axis sets, in column order
  if (axis >= 0)
    for (size_t c = 0; c < s.columns.size(); ++c)
      for (const auto& val : s.axes[axis].values)
        if (std::any_of(val.begin(), val.end(), [&](const Assignment& x) { return x.first == s.columns[c]; })) {
          axis_cols.push_back(c);
          break;
        }
  // An axis with too many values to tell apart: colour by device instead, if few enough.
  if (axis >= 0 && s.axes[axis].values.size() > max_series) {
    axis_cols.clear();
    std::set<std::string> devices;
    for (size_t c = 0; c < s.columns.size(); ++c)
      if (s.columns[c] == "device") {
        for (const auto& r : rows) devices.insert(r.request[c]);
        if (devices.size() <= max_series) axis_cols.push_back(c);
      }
  }
  auto value_label = [&](const PointResult& r) {
    if (axis_cols.empty()) return std::string("feasible points");
    std::string l;
    for (size_t c : axis_cols)
      if (!r.request[c].empty()) l += (l.empty() ? "" : " ") + s.columns[c] + "=" + r.request[c];
    return l;
  };
  for (const auto& r : rows) {
    if (!has_all(r, need)) continue;
    std::string l = value_label(r);
    auto it = by_value.find(l);
    if (it == by_value.end()) {
      it = by_value.emplace(l, series.size()).first;
      SvgSeries ser;
      ser.label = l;
      ser.colour = palette_colour(series.size() + 1);
      series.push_back(ser);
    }
    series[it->second].points.push_back(xy(r));
  }
  SvgSeries front;
  front.label = "Pareto front";
  front.colour = palette_colour(0);
  front.line = two;
  for (size_t i : sum.front) front.points.push_back(xy(rows[i]));
  series.push_back(front);

  SvgChart c;
  c.title = s.name + ": " + std::to_string(sum.ok) + " feasible of " + std::to_string(sum.points) + " points";
  c.x_label = two ? label(s.objectives[0].field) : "point (index in the sweep)";
  c.y_label = label(oy.field);
  auto wide = [&](bool x) {
    double lo = std::numeric_limits<double>::infinity(), hi = 0;
    for (const auto& ser : series)
      for (const auto& p : ser.points) {
        double v = x ? p.first : p.second;
        if (v <= 0) return false;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    return hi > 0 && hi / lo > 100;
  };
  c.log_x = two && wide(true);
  c.log_y = wide(false);
  c.width = 760;
  c.height = 480;
  return svg_xy_chart(c, series);
}

}  // namespace xpusim::sweep
