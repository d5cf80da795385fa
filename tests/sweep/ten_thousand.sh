#!/usr/bin/env bash
# configs/sweeps/tpu_analytical_10k.yaml end to end: >= 10,000 rows over both engines, a
# Pareto front in the summary, every front point a feasible row, and an SVG chart.
set -euo pipefail
bin="$1"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$bin" sweep tpu_analytical_10k -o "$tmp/rows.csv" --jobs 2 --summary json --chart "$tmp/chart.svg" > "$tmp/summary.json"
rows=$(($(wc -l < "$tmp/rows.csv") - 1))
[[ "$rows" -ge 10000 ]] || fail "$rows rows"
for engine in tpu_systemc analytical; do
  n=$(grep -c ",ok,$engine," "$tmp/rows.csv" || true)
  [[ "$n" -gt 100 ]] || fail "only $n feasible $engine rows"
done
python3 - "$tmp/summary.json" "$tmp/rows.csv" <<'PY'
import csv, json, sys
s = json.load(open(sys.argv[1]))
rows = {int(r["point"]): r for r in csv.DictReader(open(sys.argv[2]))}
assert s["points"] == len(rows) >= 10000, s["points"]
front = s["pareto_front"]
assert front, "empty Pareto front"
objs = [o["field"] for o in s["objectives"]]
sign = {o["field"]: (1 if o["goal"] == "max" else -1) for o in s["objectives"]}
for p in front:
    r = rows[p["point"]]
    assert r["status"] == "ok", r
# No feasible row is at least as good in every objective and better in one.
ok = [r for r in rows.values() if r["status"] == "ok" and all(r[f] for f in objs)]
for p in front:
    for r in ok:
        better = all(sign[f] * float(r[f]) >= sign[f] * p[f] for f in objs) and \
                 any(sign[f] * float(r[f]) > sign[f] * p[f] for f in objs)
        assert not better, (p["point"], r["point"])
print("front", len(front), "of", len(ok), "feasible rows")
PY
grep -q 'viewBox=' "$tmp/chart.svg" || fail "chart has no viewBox"
grep -q 'Pareto front' "$tmp/chart.svg" || fail "chart has no Pareto front series"
echo "sweep 10k: ok ($rows rows)"
