// Dynamic loss scaling for fp16 mixed precision (Micikevicius et al., "Mixed Precision
// Training", ICLR 2018, sec. 3.2): the loss gradient is multiplied by `scale` so small
// gradients survive fp16; gradients are unscaled in fp32 before the update. A step whose
// gradients overflowed is skipped and the scale halves; after `growth_interval` clean steps
// it doubles. Defaults are PyTorch's torch.cuda.amp.GradScaler defaults (init 2^16,
// growth 2, backoff 0.5, interval 2000). Plain C++: the device only reports "found inf".
#pragma once
#include <cstdint>

namespace xpusim::cuda {

struct LossScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int growth_interval = 2000;
  double min_scale = 1.0;  // never scale gradients down below their true size
};

class DynamicLossScaler {
 public:
  explicit DynamicLossScaler(LossScalerOptions o = {}, bool enabled = true);
  double scale() const { return enabled_ ? scale_ : 1.0; }
  double inv_scale() const { return 1.0 / scale(); }
  bool enabled() const { return enabled_; }
  // Called once per step with whether any gradient was inf/NaN. Returns true when the step's
  // update was applied (false: it was skipped on the device).
  bool update(bool found_inf);
  int64_t skipped_steps() const { return skipped_; }

 private:
  LossScalerOptions o_;
  bool enabled_;
  double scale_;
  int good_steps_ = 0;
  int64_t skipped_ = 0;
};

}  // namespace xpusim::cuda
