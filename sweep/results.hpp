// One row per sweep point: the request fields, a status and the results (predict() for speed
// and memory, the cost model for price, hours, dollars and kWh to the target). Rows are one
// line each of CSV or JSONL, formatted deterministically and read back for --resume and for
// the summary (Pareto front, best point per objective, SVG chart).
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "costmodel/offer_choice.hpp"
#include "sweep/points.hpp"
#include "sweep/sweep_spec.hpp"

namespace xpusim::sweep {

enum class RowFormat { csv, jsonl };

struct PointResult {
  long long point = 0;
  std::vector<std::string> request;        // one value per SweepSpec::columns
  std::string status;                      // ok | infeasible | error
  std::string engine, bottleneck;
  std::string power_source;                // modelled | option | offer (as compare's rows); empty: no power
  std::string note;                        // why a point is infeasible, or why a cost field is null
  std::string error;                       // status=error only: why the point failed
  std::optional<bool> fits_in_memory;
  std::map<std::string, double> values;    // result_fields() present for this point
  std::map<std::string, std::string> texts;  // text_result_fields() (plan rows)
};

// Evaluates points with predict() whose training-step graphs are built once per process per
// (model, batch, precision, optimizer, replicas) (validation's graph cache): most points of a
// sweep differ only in device constants. One per process.
class Evaluator {
 public:
  Evaluator();
  // Never throws for a bad point: its failure becomes status=error with the message as error.
  PointResult evaluate(const SweepSpec& s, const Point& p);
 private:
  std::function<StepReport(const PredictRequest&)> predict_;
};

// `offer: cheapest` in a sweep (offer_columns.cpp): whether any point asks for it; the text
// columns of a row (text_result_fields, plus offer_chosen, offer_instances, offer_date and
// offer_source when it does); those columns of one row; the choice for a predict point's
// placement (FieldError "offer" when no offer holds it).
bool uses_cheapest_offer(const SweepSpec& s);
std::vector<std::string> row_text_fields(const SweepSpec& s);
void put_offer_texts(const std::string& id, int instances, const std::string& date, const std::string& source,
                     PointResult& r);
cost::OfferChoice cheapest_point_offer(const PointRequest& r);

// The text a request value is written and compared as: a number literal in the shortest form
// that reads back to the same double ("0.10" -> "0.1"), anything else as it is.
std::string canonical_value(const std::string& v);

// Column names of a row file: point, request fields, status, engine, result fields,
// fits_in_memory, bottleneck, power_source, note, error.
std::vector<std::string> row_columns(const SweepSpec& s);
std::string csv_header(const SweepSpec& s);
// One line without its newline; notes lose their newlines so a row is always one line. JSONL
// is typed: numbers (request values included) as numbers, true/false as booleans, empty as null.
std::string format_row(const SweepSpec& s, const PointResult& r, RowFormat f);
// Parses a line written by format_row. UserError "where: ..." when it is not one.
PointResult parse_row(const SweepSpec& s, const std::string& line, RowFormat f, const std::string& where);

// Pareto front over the objectives among status=ok rows that have every objective: indices
// into `rows`, in row order. A row is on the front when no other row is at least as good in
// every objective and better in one.
std::vector<size_t> pareto_front(const std::vector<PointResult>& rows, const std::vector<Objective>& objectives);

struct Summary {
  long long points = 0, ok = 0, infeasible = 0, errors = 0;
  std::vector<size_t> front;                                // into rows
  std::vector<std::pair<Objective, std::optional<size_t>>> best;  // per objective
};
Summary summarize(const SweepSpec& s, const std::vector<PointResult>& rows);
void print_summary(std::ostream& os, const SweepSpec& s, const std::vector<PointResult>& rows, const Summary& sum,
                   bool json);
// Scatter of the first two objectives (one objective: against the point index), feasible
// points by the values of the first axis (at most 7 series), the Pareto front as a line.
std::string summary_chart_svg(const SweepSpec& s, const std::vector<PointResult>& rows, const Summary& sum);

}  // namespace xpusim::sweep
