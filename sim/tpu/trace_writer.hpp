// Chrome / Perfetto trace-event JSON of one simulated step: one track (tid) per unit,
// one complete event ("ph": "X") per task, times in microseconds.
#pragma once
#include <string>

#include "sim/tpu/core_model.hpp"

namespace xpusim::tpu {

void write_trace(const std::string& path, const Program& p, const SimResult& r);

}  // namespace xpusim::tpu
