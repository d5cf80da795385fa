#!/usr/bin/env bash
# `xpusim validate --set DEVICE:KEY=VALUE` and the note on rows measured on another CPU: a bad
# --set is one error naming the flag (exit 2), a pinned machine's figures give the level the
# unit test asserts, and rows whose `cpu=` differs from this machine are pointed out.
# Usage: validate_set.sh XPUSIM SOURCE_DIR
set -uo pipefail
bin="$1"
src="$2"
fail=0
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
check="$src/validation/measured/cpu-host-t1-check-2026-11-21.csv"

expect_error() {  # expect_error MESSAGE_PART ARGS...: exit 2 and one error line that names it
  local want="$1"
  shift
  "$bin" validate "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ "$rc" -eq 2 ] || { echo "FAIL: validate $*: exit $rc, want 2"; fail=1; }
  grep -qF -- "$want" "$tmp/err" || { echo "FAIL: validate $*: error does not say '$want':"; cat "$tmp/err"; fail=1; }
}
expect_error "--set: 'frequency_ghz=2' is not DEVICE:KEY=VALUE" --reference "$check" --set frequency_ghz=2
expect_error "--set host:nope=1: nope: unknown key" --reference "$check" --set host:nope=1
expect_error "--set host:frequency_ghz=-1: frequency_ghz: must be >= 0" --reference "$check" --set host:frequency_ghz=-1
expect_error "--set: no row is on device 'k80'" --reference "$check" --set k80:step_overhead_ms=1
# framework.KEY: checked up front against the profile of the device's rows (xpusim-cpu here),
# and reaching the rows: charging xpusim's CUDA backend TF 1.x's session run slows every row.
expect_error "session_run: expected true or false" --reference "$check" --set host:framework.session_run=maybe
expect_error "nope: unknown key" --reference "$check" --set host:framework.nope=1
gpu="$src/validation/measured/h200-2026-11-26.csv"
"$bin" validate --reference "$gpu" --format json >"$tmp/gpu.json" || { echo "FAIL: validate $gpu"; fail=1; }
"$bin" validate --reference "$gpu" --set h200:framework.session_run=true --format json >"$tmp/gpu_session.json" ||
  { echo "FAIL: validate $gpu --set h200:framework.session_run=true"; fail=1; }
python3 - "$tmp/gpu.json" "$tmp/gpu_session.json" <<'PY' || fail=1
import json, sys
now, session = (json.load(open(p)) for p in sys.argv[1:3])
rows = [(a, b) for a, b in zip(now["rows"], session["rows"]) if a.get("predicted") and a["framework"] == "xpusim-cuda"]
assert len(rows) == 32, len(rows)
assert all(b["predicted"] < a["predicted"] for a, b in rows), "a session run must slow every row"
PY

# The VM the file was measured on, pinned: the calibrated level (MAPE 6.6 % when taken).
vm=()
for kv in detect=false frequency_ghz=2.445 vcpus_per_core=1 vcpus_per_socket=2 max_vcpus=2 memory_gb=24 \
  compiled_simd_fp32_lanes=8 compiled_fma_units=2 llc_mb=33.554432; do vm+=(--set "host:$kv"); done
"$bin" validate --reference "$check" "${vm[@]}" --format json >"$tmp/pinned.json" ||
  { echo "FAIL: pinned validate"; fail=1; }
python3 - "$tmp/pinned.json" <<'PY' || fail=1
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
assert s["rows_used"] == 7, s
assert s["mape_pct"] <= 8.0, s["mape_pct"]
PY
# A clock of 5 GHz instead makes every row far too fast: --set reaches the prediction.
"$bin" validate --reference "$check" "${vm[@]}" --set host:frequency_ghz=5 --format json >"$tmp/fast.json" ||
  { echo "FAIL: validate at 5 GHz"; fail=1; }
python3 - "$tmp/fast.json" <<'PY' || fail=1
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
assert s["mape_pct"] > 40.0, s["mape_pct"]
PY

# Rows measured on a CPU this machine is not (a clock no machine reports): one note on stderr,
# none once the user pins the host's figures, none for rows that do not say where they ran.
sed 's/cpu=[^,]*,/cpu=Testvendor family 1 model 2,/' "$src/validation/measured/cpu-host-zen4-t1-2026-11-27.csv" >"$tmp/other.csv"
"$bin" validate --reference "$tmp/other.csv" >/dev/null 2>"$tmp/err" || { echo "FAIL: validate other.csv"; fail=1; }
grep -q "^xpusim: note: 7 rows on the \`host\` device ran on another CPU (Testvendor family 1 model 2" "$tmp/err" ||
  { echo "FAIL: no note for rows of another CPU:"; cat "$tmp/err"; fail=1; }
"$bin" validate --reference "$tmp/other.csv" "${vm[@]}" >/dev/null 2>"$tmp/err" || { echo "FAIL: pinned other.csv"; fail=1; }
! grep -q "note:" "$tmp/err" || { echo "FAIL: a note although the host is pinned"; fail=1; }
"$bin" validate --reference "$check" >/dev/null 2>"$tmp/err" || { echo "FAIL: validate check"; fail=1; }
! grep -q "note:" "$tmp/err" || { echo "FAIL: a note for rows without cpu="; fail=1; }

[ "$fail" -eq 0 ] && echo "validate --set: all checks passed"
exit "$fail"
