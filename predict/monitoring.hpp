// Monitoring metrics as the tools a study's author read them (nvidia-smi, top): GPU
// utilisation as nvidia-smi defines it, memory-controller utilisation, GPU memory used under
// the framework's allocator policy, and host CPU utilisation, derived from a predicted step
// (docs/outputs.md, "xpusim predict"). Issue 31.
#pragma once
#include "engine/engine.hpp"

namespace xpusim {

// Adds gpu_util_pct_smi, gpu_mem_ctrl_util_pct, gpu_mem_used_bytes and cpu_util_pct to
// rep.extra for an accelerator on an engine whose step the host pass bounded (analytical);
// nothing for CPUs, real backends or steps that did not run.
void apply_monitoring(const StepRequest& req, const OpGraph& g, StepReport& rep);

}  // namespace xpusim
