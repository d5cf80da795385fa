#!/usr/bin/env bash
# Issue 14's done-when check: torchvision's resnet50 exported to ONNX (scripts/make_onnx_fixtures.py,
# random weights, never committed: ~100 MB) gives the zoo resnet50's parameter count and forward
# FLOPs within 0.5%, and predictions within 1% on analytical GPUs and the SystemC TPU v2-8.
# Exit 77 (ctest: SKIPPED) when no python3 here can import torch and torchvision.
# Usage: resnet50_vs_zoo.sh XPUSIM_BIN SOURCE_DIR OUT_DIR
set -euo pipefail
bin="$1"; src="$2"; out="$3"
source "$(dirname "${BASH_SOURCE[0]}")/torch_python.sh"
mkdir -p "$out"
model="$out/resnet50.onnx"
if [[ ! -s "$model" || "$src/scripts/make_onnx_fixtures.py" -nt "$model" ]]; then
  "$py" "$src/scripts/make_onnx_fixtures.py" "$out" resnet50 2>/dev/null
fi
want_params=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["trainable_params"])' "$out/resnet50.json")

# field FILE KEY -> the value of KEY in a flat JSON object
field() { "$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
# within A B TOL NAME -> fails unless |A-B| <= TOL * |B|
within() {
  "$py" -c 'import sys; a,b,t=float(sys.argv[1]),float(sys.argv[2]),float(sys.argv[3]); sys.exit(0 if abs(a-b)<=t*abs(b) else 1)' "$1" "$2" "$3" \
    || { echo "FAIL: $4: onnx $1 vs zoo $2 (tolerance $3)"; exit 1; }
  echo "ok: $4: onnx $1 vs zoo $2"
}

"$bin" graph --model "$model" --batch 32 --totals --format json >"$out/graph_onnx.json"
"$bin" graph --model resnet50 --batch 32 --totals --format json >"$out/graph_zoo.json"
within "$(field "$out/graph_onnx.json" params)" "$want_params" 0 "params = torchvision's count"
within "$(field "$out/graph_onnx.json" params)" "$(field "$out/graph_zoo.json" params)" 0.005 "params"
within "$(field "$out/graph_onnx.json" flops_forward)" "$(field "$out/graph_zoo.json" flops_forward)" 0.005 "forward FLOPs"
within "$(field "$out/graph_onnx.json" flops_train_step)" "$(field "$out/graph_zoo.json" flops_train_step)" 0.005 "train-step FLOPs"

predict_pair() {  # NAME ARGS... : throughput and step time of both models within 1%
  local name="$1"; shift
  "$bin" predict --model "$model" "$@" --format json >"$out/p_onnx.json"
  "$bin" predict --model resnet50 "$@" --format json >"$out/p_zoo.json"
  [[ "$(field "$out/p_zoo.json" fits_in_memory)" == True ]] || { echo "FAIL: $name: the zoo model does not fit; pick another batch"; exit 1; }
  within "$(field "$out/p_onnx.json" step_time_s)" "$(field "$out/p_zoo.json" step_time_s)" 0.01 "$name step time"
  within "$(field "$out/p_onnx.json" memory_bytes)" "$(field "$out/p_zoo.json" memory_bytes)" 0.01 "$name memory"
}
predict_pair "v100" --device v100_sxm2_16gb --batch 64
predict_pair "a100 x8" --device a100_sxm4_40gb --count 8 --system dgx_a100 --batch 128
predict_pair "tpu_v2-8" --device tpu_v2 --count 8 --system cloud_tpu_v2-8 --batch 128 --precision bf16
echo "resnet50.onnx matches the zoo resnet50"
