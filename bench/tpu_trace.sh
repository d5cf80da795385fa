#!/usr/bin/env bash
# Cost of `predict --trace` on the tpu_systemc engine (issue 36): one ResNet-50 step on a Cloud
# TPU v2-8 (batch 128 per core, bf16; every core simulated), through bench/trace_cost.sh
# (medians, size, events; fails over 1 s or 150 MB).
# Usage: bench/tpu_trace.sh build/cli/xpusim [N]
set -eu
exec bash "$(dirname "$0")/trace_cost.sh" "$1" "${2:-5}" -- predict --device tpu_v2 --count 8 \
  --system cloud_tpu_v2-8 --model resnet50 --batch 128 --precision bf16 --format json
