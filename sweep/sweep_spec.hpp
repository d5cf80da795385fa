// A design-space sweep (configs/sweeps/*.yaml), parsed and validated once into an immutable
// SweepSpec: fixed request fields, axes over request fields (a generic field table, one line
// per field) or device YAML keys (`set.KEY`), sampling (grid, random, Latin hypercube),
// an optional training target, constraints and objectives. Every value of every axis is
// checked here, so a bad sweep fails with `file:line: key: message` before any point runs.
// A sweep's points run predict() (one training step of a placement) or, with `evaluate: plan`,
// the large-model planner of `xpusim plan` (its best parallel configuration per point).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "costmodel/plan_document.hpp"
#include "costmodel/pricing.hpp"
#include "costmodel/study_option.hpp"
#include "predict/llm_plan.hpp"
#include "predict/predict.hpp"

namespace xpusim::sweep {

// What a point evaluates (the sweep's `evaluate:` key).
enum class PointKind {
  predict,  // predict(): one training step of a placement, priced by the cost model
  plan,     // plan_llm(): every parallel configuration of a decoder on a cluster, the best kept
};
const char* point_kind_name(PointKind k);
// An axis value as a whole number; FieldError(field) when `v` is not exactly one.
long long parse_axis_integer(const std::string& field, const std::string& v);

// What one point asks for: a predict() request plus how it is billed, or (PointKind::plan) a
// planner request plus the tokens to train.
struct PointRequest {
  PredictRequest predict;
  std::string offer;                              // price catalog id; empty = no dollars
  std::string pricing = "on_demand";              // tier (plan: empty = the offer's first)
  std::string offer_provider, offer_region;       // offer: cheapest: only these (empty = any)
  std::optional<double> power_w;                  // overrides the modelled / offer's power for kWh
  LlmPlanRequest plan;                            // PointKind::plan
  cost::PlanFixedNames plan_fixed;                // fix_* fields, read into plan.fixed by request_for
  double tokens = 0;                              // plan: tokens to train (0 = 20 per parameter)
  double goodput = 1.0;                           // plan: share of wall time that trains
};

// A request field an axis (or `fixed:`) may set. Adding an axis is one line in the table
// (sweep_spec.cpp). `apply` throws FieldError(key, ...) for a value of the wrong type.
struct AxisField {
  std::string key;
  std::string description;
  bool integer = false;     // ranges ({from, to, count}) round to whole numbers
  std::function<void(PointRequest&, const std::string&)> apply;
};
const std::vector<AxisField>& axis_fields(PointKind k = PointKind::predict);
// Prefix of axes over device YAML keys: `set.mxu_rows` is `--set mxu_rows=VALUE`.
inline constexpr const char* kSetPrefix = "set.";
// Applies one assignment (a field of the table or set.KEY). FieldError on a bad value.
void apply_assignment(PointRequest& r, const std::string& key, const std::string& value,
                      PointKind k = PointKind::predict);

using Assignment = std::pair<std::string, std::string>;  // field key, value as written

struct SweepAxis {
  std::string name;                           // the field key, or the name of a zipped axis
  std::vector<std::vector<Assignment>> values;  // each value sets one or more fields
  std::string where;                          // file:line
};

// Bounds checked by load_sweep before anything is allocated (docs/reliability.md).
inline constexpr long long kMaxAxisValues = 1'000'000;     // values of one axis
inline constexpr long long kMaxSweepPoints = 100'000'000;  // points of a sweep

enum class Sampling { grid, random, lhs };
const char* sampling_name(Sampling s);

// Numeric result fields constraints and objectives may name (results.cpp fills them).
struct ResultField {
  std::string key;
  bool maximize;            // the natural direction of an objective on it
  std::string description;  // with the unit
  std::string title;        // axis title in words, with the unit in parentheses
};
const std::vector<ResultField>& result_fields(PointKind k = PointKind::predict);
const ResultField* find_result_field(const std::string& key, PointKind k = PointKind::predict);
// Text result columns of a plan row (the best configuration's sharding, recompute mode and
// sequence parallelism), written after the numeric ones; none for predict rows.
const std::vector<std::string>& text_result_fields(PointKind k);

struct Bound {
  std::string field;
  bool is_max = true;       // value must be <= limit (max) or >= limit (min)
  double limit = 0;
  std::string where;
};

struct Objective {
  std::string field;
  bool maximize = false;
};

struct SweepSpec {
  std::string name, description, file;
  PointKind kind = PointKind::predict;        // what a point runs (`evaluate:`)
  std::vector<Assignment> fixed;              // set on every point, before the axes
  std::vector<SweepAxis> axes;                // file order
  Sampling sampling = Sampling::grid;
  long long samples = 0;                      // random / lhs: number of points
  uint64_t seed = 1;
  std::optional<cost::StudyTarget> target;    // for hours, dollars and kWh to target
  bool require_fit = true;                    // points that do not fit in memory are infeasible
  std::vector<Bound> bounds;
  std::vector<Objective> objectives;
  std::vector<std::string> columns;           // request fields written per row (fixed, then axes)
  long long grid_size() const;                // product of axis lengths
};

// The request of one choice of axis values (index per axis): fixed fields first, then each
// axis's chosen value. FieldError on a bad value (load_sweep has checked them all).
PointRequest request_for(const SweepSpec& s, const std::vector<size_t>& choice);

// Loads and validates a sweep (name under configs/sweeps/ or a path).
SweepSpec load_sweep(const std::string& path);

}  // namespace xpusim::sweep
