// The fuzz build checks a sweep's plan points at load (clusters, offers: sweep/plan_point.cpp)
// but never searches them: the large-model planner (predict/llm_plan.cpp, which needs the
// engines' specs) is not linked, and these definitions make it unavailable. A file of its own
// so that a fuzz target defining its own engine stubs (fuzz_loaders.cpp) does not also pull
// no_engines.cpp's.
#include "common/error.hpp"
#include "predict/llm_plan.hpp"

namespace xpusim {

LlmPlanResult plan_llm(const LlmPlanRequest&) { throw UnavailableError("the planner is not in the fuzz build"); }
ModelSpec llm_model_of(const LlmPlanRequest&) { throw UnavailableError("the planner is not in the fuzz build"); }

}  // namespace xpusim
