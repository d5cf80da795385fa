// The `tpu_systemc` engine: loads the device YAML (with --set overrides) and the system,
// lowers the per-core training step to a TPU program and simulates it on the SystemC model.
#pragma once
#include <memory>

#include "engine/engine.hpp"

namespace xpusim::tpu {

std::unique_ptr<Engine> make_tpu_engine();

}  // namespace xpusim::tpu
