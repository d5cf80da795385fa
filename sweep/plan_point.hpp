// Sweep points that run the large-model planner (`evaluate: plan`, docs/sweeps.md): the
// request fields such a point takes (those of `xpusim plan`), the result fields of its row
// (the best configuration's degrees, speed, memory and price), the load-time check of a
// combination of fields, and the evaluation itself. Kept apart from sweep_spec.cpp and
// results.cpp, which call it, so that each stays one purpose and under the size limit.
#pragma once
#include <string>
#include <vector>

#include "sweep/results.hpp"
#include "sweep/sweep_spec.hpp"

namespace xpusim::sweep {

const std::vector<AxisField>& plan_axis_fields();
const std::vector<ResultField>& plan_result_fields();
const std::vector<std::string>& plan_text_fields();

// Fills r.plan from the fields applied so far (offer, pricing, fix_*) before the planner
// runs; FieldError naming the sweep field.
void finish_plan_request(PointRequest& r);

// What the planner would refuse before searching ("field: message"), empty when the request
// can run: no model or cluster, a model without an llm shape, an unknown cluster or device,
// more GPUs than the cluster holds, an offer without the device. Cheap (no search), so every
// value of every axis is checked at load.
std::string plan_request_problem(const PointRequest& r);

// Runs the planner for one point. Throws what plan_llm throws (the caller turns it into a
// status=error row); a point whose every configuration fails is status=infeasible with the
// reasons in its note.
void evaluate_plan(const PointRequest& r, PointResult& out);

}  // namespace xpusim::sweep
