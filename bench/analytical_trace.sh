#!/usr/bin/env bash
# Cost of `predict --trace` on the analytical engine (issue 36): a ResNet-50 step on 8 V100s
# (DGX-1), through bench/trace_cost.sh (medians, size, events; fails over 1 s or 150 MB).
# Usage: bench/analytical_trace.sh build/cli/xpusim [N]
set -eu
exec bash "$(dirname "$0")/trace_cost.sh" "$1" "${2:-5}" -- predict --device v100_sxm2_16gb --count 8 \
  --system dgx1v_nvlink --model resnet50 --batch 64 --precision mixed_fp16 --format json
