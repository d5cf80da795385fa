#!/usr/bin/env bash
# `xpusim plan` bad input: one error naming the flag, exit 2 (issue 30). The cases on a zoo
# decoder run when the zoo has mpt_125m (12 heads, 12 layers; issue 30's model half).
# Usage: plan_errors.sh XPUSIM
set -uo pipefail
bin="$1"
fail=0
expect() {  # expect FLAG ARGS...: exit 2 and stderr "xpusim: error: FLAG: ..."
  local flag="$1"; shift
  local err rc
  err="$("$bin" plan "$@" 2>&1 >/dev/null)"; rc=$?
  if [[ $rc -ne 2 || "$err" != *"error: $flag"* ]]; then
    echo "FAIL: plan $* -> exit $rc, '$err' (expected exit 2 naming $flag)"; fail=1
  else
    echo "ok: $flag: $err"
  fi
}
c=(--cluster hgx_h100_ib3200 --gpus 8 --global-batch 64 --seq-len 512)
expect --model --model bert_base "${c[@]}"
expect --sharding --model gpt2 "${c[@]}" --sharding zero9
expect --recompute --model gpt2 "${c[@]}" --recompute some
expect --sequence-parallel --model gpt2 "${c[@]}" --sequence-parallel maybe
if "$bin" models 2>/dev/null | grep -qw mpt_125m; then
  expect --cluster --model mpt_125m --cluster no_such_cluster --gpus 8 --global-batch 64
  expect --tp --model mpt_125m "${c[@]}" --tp 5
  expect --pp --model mpt_125m "${c[@]}" --pp 5
  expect --gpus --model mpt_125m --cluster hgx_a100_roce1600 --gpus 1000000 --global-batch 64 --seq-len 512
  expect --precision --model mpt_125m --cluster hgx_a100_roce1600 --gpus 8 --global-batch 64 --seq-len 512 --precision fp8
  expect --ep --model mpt_125m "${c[@]}" --ep 2
  expect --global-batch --model mpt_125m "${c[@]}" --tp 1 --pp 1 --cp 1 --micro-batch 3 --global-batch 66
  out="$("$bin" plan --model mpt_125m "${c[@]}" --top 3 --format json)" || { echo "FAIL: plan mpt_125m"; fail=1; }
  grep -q '"ranked"' <<<"$out" || { echo "FAIL: no ranked list"; fail=1; }
else
  echo "note: mpt_125m not in the zoo; the decoder cases did not run"
fi
exit $fail
