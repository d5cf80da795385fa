#!/usr/bin/env bash
# MaxText on TPU v5e (issue 32): `xpusim validate` on the 24 shared rows of
# tpu_llm_calibration.csv (1-32 slices of 256 chips, 16B-128B) through the TPU large-model
# planner. Every row must be used (none skipped) and the MAPE stay at or under the figure
# reached when the constants were fitted (3.11%, docs/tpu-llm.md) plus a little slack.
# Usage: tpu_llm_validate.sh XPUSIM DATA_DIR
set -uo pipefail
bin="$1"; data="$2"
max_mape=3.5
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
"$bin" validate --reference "$data/reference/tpu_llm_calibration.csv" --format json >"$out" || {
  echo "FAIL: validate exited $?"; exit 1; }
python3 - "$max_mape" "$out" <<'PY'
import json, sys
limit = float(sys.argv[1])
doc = json.load(open(sys.argv[2]))
s = doc["summary"]
print(f"rows used {s['rows_used']} of {s['rows_total']}, skipped {s['rows_skipped']}, MAPE {s['mape_pct']:.2f}% (limit {limit}%)")
fail = False
if s["rows_total"] != 24 or s["rows_used"] != 24 or s["rows_skipped"] != 0:
    print("FAIL: expected all 24 rows used:", s.get("skipped_reasons"))
    fail = True
if s["mape_pct"] is None or s["mape_pct"] > limit:
    print(f"FAIL: MAPE {s['mape_pct']} > {limit}")
    fail = True
sys.exit(1 if fail else 0)
PY
