// predict() with the training-step graph built once per (model, batch, precision, optimizer,
// replicas). Calibration predicts the same rows hundreds of times with only device
// constants changing; graph construction and work counting do not depend on those, so
// rebuilding them each time would dominate a fit. Semantics follow predict/predict.cpp exactly
// (same checks, same messages); real backends (cpu, cuda) go straight to predict().
#pragma once
#include "validation/validate.hpp"

namespace xpusim::validation {

// A PredictFn with its own graph cache (shared by copies of the returned function).
PredictFn graph_caching_predictor();

}  // namespace xpusim::validation
