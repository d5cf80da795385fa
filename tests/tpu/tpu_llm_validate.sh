#!/usr/bin/env bash
# MaxText on TPU v5e (issue 32): `xpusim validate` on the 24 shared rows of
# tpu_llm_calibration.csv (1-32 slices of 256 chips, 16B-128B) through the TPU large-model
# planner. Every row must be used (none skipped) and the MAPE stay at or under the figure
# reached when the constants were fitted (docs/tpu-llm.md) plus a little slack.
# Usage: tpu_llm_validate.sh XPUSIM DATA_DIR
set -uo pipefail
bin="$1"; data="$2"
max_mape=4.0
out="$("$bin" validate --reference "$data/reference/tpu_llm_calibration.csv" --format json)" || {
  echo "FAIL: validate exited $?"; exit 1; }
summary="$(grep -o '"summary": {[^}]*}' <<<"$out")"
used="$(sed -n 's/.*"rows_used": \([0-9]*\).*/\1/p' <<<"$summary")"
skipped="$(sed -n 's/.*"rows_skipped": \([0-9]*\).*/\1/p' <<<"$summary")"
mape="$(sed -n 's/.*"mape_pct": \([0-9.eE+-]*\).*/\1/p' <<<"$summary")"
echo "rows used $used, skipped $skipped, MAPE $mape%"
fail=0
[[ "$used" == 24 && "$skipped" == 0 ]] || { echo "FAIL: expected 24 rows used, 0 skipped"; grep -o '"reason": "[^"]*"' <<<"$out" | sort | uniq -c; fail=1; }
awk -v m="$mape" -v x="$max_mape" 'BEGIN { exit !(m != "" && m + 0 <= x + 0) }' || { echo "FAIL: MAPE $mape% > $max_mape%"; fail=1; }
exit $fail
