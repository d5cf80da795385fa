#!/usr/bin/env bash
# `xpusim plan` on TPU slices (issue 32): llama3_70b on v5p-256 (128 chips, 3D torus) and on
# v5e-256 (16x16) print ranked configurations with tp over ICI; a multislice count adds DCN data
# parallelism; bad input (a slice the generation does not offer, a chip count that is not a
# slice nor a multiple of it, tp larger than a slice) is one error naming the flag, exit 2.
# Usage: plan_tpu.sh XPUSIM
set -uo pipefail
bin="$1"
fail=0
source "$(dirname "${BASH_SOURCE[0]}")/../lib/expect_plan_error.sh"
m=(--model llama3_70b --global-batch 256 --seq-len 8192)
expect --cluster "${m[@]}" --cluster v5e-100
expect --cluster "${m[@]}" --cluster v5p-100000
expect --gpus "${m[@]}" --cluster v5e-256 --gpus 300
expect --gpus "${m[@]}" --cluster tpu_v5e_256_multislice --gpus 384
expect --tp "${m[@]}" --cluster v5e-256 --gpus 512 --tp 512
expect --tp "${m[@]}" --cluster v5p-256 --tp 256
expect --pp "${m[@]}" --cluster v5e-256 --pp 2
expect --device "${m[@]}" --cluster v5e-256 --device tpu_v5p
expect --gpus --model llama3_70b --cluster hgx_h100_ib3200 --global-batch 64 --seq-len 512

for c in v5p-256 v5e-256; do
  out="$("$bin" plan "${m[@]}" --cluster "$c" --top 5 --format json)" || { echo "FAIL: plan on $c exited $?"; fail=1; continue; }
  n="$(grep -o '"tokens_per_s"' <<<"$out" | wc -l)"
  chips="$(grep -o '"gpus": [0-9]*' <<<"$out" | head -1)"
  [[ "$n" -ge 2 ]] || { echo "FAIL: $c: fewer than 2 ranked configurations"; fail=1; }
  echo "ok: $c: $n ranked, $chips"
done
# v5p-256 counts TensorCores: 128 chips; v5e-256 counts chips. (Outputs captured first: with
# pipefail, grep -q closing the pipe early would fail the command.)
out="$("$bin" plan "${m[@]}" --cluster v5p-256 --format json)"
grep -q '"gpus": 128' <<<"$out" || { echo "FAIL: v5p-256 is not 128 chips"; fail=1; }
out="$("$bin" plan "${m[@]}" --cluster v5e-256 --format json)"
grep -q '"gpus": 256' <<<"$out" || { echo "FAIL: v5e-256 is not 256 chips"; fail=1; }
# Text output ranks them; two slices of v5e-256 join over DCN and still plan.
out="$("$bin" plan "${m[@]}" --cluster v5e-256 --top 3)"
grep -q "zero3" <<<"$out" || { echo "FAIL: text output"; fail=1; }
# A slice's devices are chips: the text says "per chip", not "per GPU" (issue 30d).
grep -q "GB per chip" <<<"$out" || { echo "FAIL: text output does not say per chip"; fail=1; }
if grep -q "GPU" <<<"$out"; then echo "FAIL: text output of a TPU slice says GPU"; fail=1; fi
out="$("$bin" plan "${m[@]}" --cluster v5e-256 --gpus 512 --format json)"
grep -q '"gpus": 512' <<<"$out" || { echo "FAIL: 2 x v5e-256"; fail=1; }
# Deterministic.
a="$("$bin" plan "${m[@]}" --cluster v5e-256 --format json)"; b="$("$bin" plan "${m[@]}" --cluster v5e-256 --format json)"
[[ "$a" == "$b" ]] || { echo "FAIL: two runs differ"; fail=1; }
exit $fail
