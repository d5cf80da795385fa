#!/usr/bin/env bash
# `xpusim sweep` with plan points (issue 30 item 5): the shipped configs/sweeps/llm_plan_clusters
# runs, each row equals `xpusim plan --format json`'s first ranked configuration for its point,
# the rows are byte-identical across --jobs 1 and 2, and a bad plan sweep is one
# `file:line: key: message` error with exit 2 (the schema of plan rows: tests/schema/).
# Usage: sweep_plan.sh XPUSIM SOURCE_DIR WORK_DIR
set -uo pipefail
bin="$1"; src="$2"; work="$3"
fail=0
rm -rf "$work"; mkdir -p "$work"
sweep="$src/configs/sweeps/llm_plan_clusters.yaml"

"$bin" sweep "$sweep" -o "$work/a.jsonl" --summary json >"$work/summary.json" || { echo "FAIL: sweep exited $?"; exit 1; }
"$bin" sweep "$sweep" -o "$work/b.jsonl" --jobs 2 --summary table >"$work/summary.txt" || { echo "FAIL: sweep --jobs 2 exited $?"; exit 1; }
cmp -s "$work/a.jsonl" "$work/b.jsonl" || { echo "FAIL: rows differ between --jobs 1 and --jobs 2"; fail=1; }
"$bin" sweep "$sweep" -o "$work/a.csv" --summary json >/dev/null || { echo "FAIL: csv sweep"; fail=1; }
[[ $(wc -l <"$work/a.jsonl") -eq 6 ]] || { echo "FAIL: $(wc -l <"$work/a.jsonl") rows, expected 6"; fail=1; }
[[ $(wc -l <"$work/a.csv") -eq 7 ]] || { echo "FAIL: csv: expected a header and 6 rows"; fail=1; }
grep -q "Pareto front over days_to_train (min), cost_to_train_usd (min)" "$work/summary.txt" ||
  { echo "FAIL: table summary"; cat "$work/summary.txt"; fail=1; }

# Each row is plan's best for its point.
python3 - "$bin" "$work/a.jsonl" "$work/summary.json" <<'PY' || fail=1
import json, subprocess, sys
bin_, rows_path, summary_path = sys.argv[1:4]
rows = [json.loads(l) for l in open(rows_path)]
bad = 0
for r in rows:
    if r["status"] != "ok":
        print(f"FAIL: point {r['point']}: {r['status']} {r['note']} {r['error']}"); bad = 1; continue
    cmd = [bin_, "plan", "--model", r["model"], "--cluster", r["cluster"], "--device", r["device"],
           "--gpus", str(r["gpus"]), "--global-batch", str(r["global_batch"]), "--seq-len", str(r["seq_len"]),
           "--offer", r["offer"], "--top", "1", "--format", "json"]
    plan = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    best = plan["ranked"][0]
    for k in ("dp", "tp", "pp", "cp", "ep", "micro_batch", "sharding", "recompute", "sequence_parallel"):
        if r[k] != best[k]:
            print(f"FAIL: point {r['point']}: {k} {r[k]!r} != plan's {best[k]!r}"); bad = 1
    if r["pp_virtual_stages"] != best["pp_virtual_stages"]:
        print(f"FAIL: point {r['point']}: pp_virtual_stages"); bad = 1
    pairs = [("throughput_tokens_per_s", best["tokens_per_s"]), ("step_time_s", best["step_time_s"]),
             ("mfu", best["mfu"]), ("usd_per_million_tokens", best["usd_per_million_tokens"]),
             ("price_usd_per_h", best["usd_per_h"]), ("days_to_train", plan["train"]["days"]),
             ("cost_to_train_usd", plan["train"]["usd"]), ("memory_bytes", best["memory_per_gpu_bytes"]),
             ("configurations_fitting", plan["configurations_fitting"])]
    for k, want in pairs:
        if abs(r[k] - want) > 1e-9 * max(1.0, abs(want)) + 0.5 * (k == "memory_bytes"):
            print(f"FAIL: point {r['point']}: {k} {r[k]} != plan's {want}"); bad = 1
s = json.load(open(summary_path))
if s["points"] != 6 or s["ok"] != 6 or not s["pareto_front"]:
    print(f"FAIL: summary {s['points']} points, {s['ok']} ok, front {len(s['pareto_front'])}"); bad = 1
print("ok: rows equal plan's best" if not bad else "")
sys.exit(bad)
PY

# Bad input: file:line: key: message, exit 2.
cat >"$work/bad.yaml" <<'YAML'
evaluate: plan
fixed: {model: llama3_70b, cluster: hgx_h100_ib3200, global_batch: 64}
axes:
  gpus: [64, 128]
  batch: [1, 2]
YAML
err="$("$bin" sweep "$work/bad.yaml" -o "$work/bad.csv" 2>&1 >/dev/null)"; rc=$?
if [[ $rc -ne 2 || "$err" != *"bad.yaml:5: axes.batch: unknown axis key 'batch'"* ]]; then
  echo "FAIL: bad plan sweep -> exit $rc, '$err'"; fail=1
else
  echo "ok: $err"
fi
exit $fail
