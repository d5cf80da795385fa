// The host and framework side of a step, once for every engine: engines return the device
// step (StepReport::device_step); this pass adds what the host and the framework profile do
// around it — the input pipeline's time (before the step, for engines that simulate the
// infeed queue) and its bound, the host and framework step overheads, global_batch = batch x
// replicas, samples/s and tokens/s, the one-off compile time and the modelled power.
// Which profile fields apply to which engine is FrameworkSpec's table (engine/framework_spec.hpp).
#pragma once
#include "engine/engine.hpp"

namespace xpusim {

// Real data: seconds the host's input pipeline needs for the samples of one step, from the
// dataset's per-sample cost, the framework's cost scale and threads and the placement's
// InputFeed. 0 for synthetic data. InternalError when real data has no resolved dataset.
double host_batch_s(const StepRequest& req, const OpGraph& g);

// Host threads the framework's input pipeline runs on for this feed: its workers per device
// (on the feed's system) x the devices fed, or its input_threads, capped at the feed's cores
// and counted in cores of their own on an SMT host (smt_thread_equivalents); 0 = every core.
double input_pipeline_threads(const FrameworkSpec& fw, const InputFeed& feed);

// `threads` busy threads of a pipeline that states its thread count, in cores running one
// thread each: on a host with SMT (InputFeed::threads_per_core > 1) each runs on a core of its
// own up to the physical cores and the rest add smt_yield of a core each; without SMT
// `threads`, at most the feed's cores. (A pipeline on every core, input_threads 0, takes the
// feed's cores in the datasets' unit, per hardware thread of a fully loaded host, unchanged.)
double smt_thread_equivalents(double threads, const InputFeed& feed);

// Seconds the framework's host thread spends dispatching the step graph's ops
// (FrameworkSpec::host_dispatch_us_per_op x ops); 0 for the calibration stack.
double host_dispatch_s(const StepRequest& req, const OpGraph& g);

// Accelerator seconds a device loader (DALI) spends decoding one micro-batch of real samples:
// device_decode_us_per_sample per sample, scaled by the dataset's host cost per sample over
// device_decode_reference_ms where the profile sets it; 0 for a host pipeline or synthetic data.
double device_decode_s(const StepRequest& req, const OpGraph& g);

// Turns the engine's device step into the step: step time, global batch, throughput, the
// framework's name and step overhead, and for prefetched / shared_cores engines the input
// pipeline bound, bottleneck and utilisation.
void apply_host_pass(const StepRequest& req, const OpGraph& g, StepReport& rep);

// The one-off compile time of the framework (unless the engine modelled one), the modelled
// power and energy, and tokens/s of token-wise models.
// tokens_per_sample: of the model (0 = not a token-wise model).
void apply_run_costs(const ResolvedPlacement& pl, bool real_backend, int64_t tokens_per_sample, const OpGraph& g,
                     StepReport& rep);

}  // namespace xpusim
