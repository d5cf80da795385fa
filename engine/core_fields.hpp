// The core fields every engine's report carries under the same names (docs/schema/
// predict.schema.json), so a GPU and a TPU prediction join without a hand-made column map:
// flops_per_step, achieved_flops_per_s, mfu, hbm_bytes_per_step, power_w (top level) and
// utilization.compute / .memory / .network. Engines keep their own names too (the TPU's
// utilization.mxu, hbm, ici; the analytical model's bytes_per_step); this maps them.
#pragma once
#include <nlohmann/json.hpp>

namespace xpusim {

struct StepReport;

// Adds the core fields to a report's JSON (to_json(): `extra` still nested), leaving every
// existing field as it is. A value the engine does not model is null, never a guess.
void add_core_fields(const StepReport& rep, nlohmann::json& j);

}  // namespace xpusim
