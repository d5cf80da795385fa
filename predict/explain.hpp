// `xpusim predict --explain`: the request's graph priced op by op by the analytical engine
// (devices/analytical/explain.hpp). FieldError("explain") for another engine.
#pragma once
#include <vector>

#include "devices/analytical/explain.hpp"
#include "predict/predict.hpp"

namespace xpusim {

std::vector<analytical::OpExplain> explain_request(const PredictRequest& r);

}  // namespace xpusim
