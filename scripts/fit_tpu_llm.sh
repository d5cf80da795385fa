#!/usr/bin/env bash
# Grid fit of the TPU large-model planner's three constants on the shared MaxText v5e rows
# (docs/tpu-llm.md, "Constants and sources"): the maxtext profile's tensor_efficiency_scale and
# tpu_v5e's dcn_efficiency and dcn_step_latency_us. `xpusim validate` has no --set, so each grid
# point edits a scratch copy of configs/ and runs validate on it (XPUSIM_CONFIG_DIR); prints
# "MAPE eff dcn_efficiency latency_us", best first. Only tpu_llm_calibration.csv is read.
# Usage: scripts/fit_tpu_llm.sh [XPUSIM]   (default build/cli/xpusim); REF=CSV fits other rows (leave-one-model-out)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$root/build/cli/xpusim}"
ref="${REF:-$root/tests/data/reference/tpu_llm_calibration.csv}"
cfg="$(mktemp -d)"
trap 'rm -rf "$cfg"' EXIT
cp -r "$root/configs/." "$cfg/"
for eff in 0.82 0.84 0.85 0.86 0.87 0.88 0.90 0.92; do
  for de in 0.6 0.8 1.0; do
    for lat in 300 400 450 500 550 600 700; do
      sed -i "s/^tensor_efficiency_scale: .*/tensor_efficiency_scale: $eff/" "$cfg/frameworks/maxtext.yaml"
      sed -i "s/^dcn_efficiency: .*/dcn_efficiency: $de/; s/^dcn_step_latency_us: .*/dcn_step_latency_us: $lat/" \
        "$cfg/devices/tpu_v5e.yaml"
      m=$(XPUSIM_CONFIG_DIR="$cfg" "$bin" validate --reference "$ref" --format json |
          python3 -c "import json,sys; print(round(json.load(sys.stdin)['summary']['mape_pct'], 3))")
      echo "$m $eff $de $lat"
    done
  done
done | sort -n
