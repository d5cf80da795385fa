// The SM clock a GPU sustains under its board power limit (docs/gpu_model.md, "Sustained clock
// under the power limit"). Datasheet peaks are stated at the boost clock; a board whose tensor
// cores would draw more than its power limit allows at that clock runs them slower. Dynamic
// power is C V^2 f and along the boost curve the voltage rises about in step with the clock, so
// the dynamic power goes as the clock cubed: the sustained clock is the boost clock times
// cbrt(budget / demand), never above the boost clock.
#pragma once

#include "devices/analytical/device_spec.hpp"
#include "models/dtype.hpp"

namespace xpusim::analytical {

// Dynamic power goes as f^kClockPowerExponent along the boost curve (P = C V^2 f, V ~ f).
inline constexpr double kClockPowerExponent = 3.0;

// Energy of a tensor-core FLOP at this precision relative to an fp16/bf16 one: the tensor cores
// move the same operand bits per clock at every precision (TF32's 4-byte operands run at half
// the fp16 rate, fp8's 1-byte ones at twice it), so a FLOP costs in proportion to its operand
// width. 0 where the precision has no tensor-core math (fp32 on CUDA cores).
double tensor_energy_weight(Precision p);

// Clock factor (sustained / boost, in (0, 1]) of a board with `budget_w` watts above idle whose
// kernels would draw `demand_w` above idle at the boost clock: min(1, (budget / demand)^(1/3)).
// 1 when either is not positive (no limit stated or nothing drawn).
double power_limited_clock_factor(double budget_w, double demand_w);

// The factor for tensor-core kernels at precision p running at `tensor_flops_s` (achieved, at
// the boost clock) on device d: its architecture's energy per fp16 tensor FLOP
// (d.tensor_pj_per_flop) times the precision's weight times the rate, against the board's
// dynamic range (max_power_w - idle_power_w). 1 without a kernel model, a stated power or an
// energy constant.
double tensor_clock_factor(const DeviceSpec& d, Precision p, double tensor_flops_s);

}  // namespace xpusim::analytical
