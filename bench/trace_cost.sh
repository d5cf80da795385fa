#!/usr/bin/env bash
# Cost of `predict --trace` (issue 36): wall time and peak RSS of one prediction with the
# trace (.json and .json.gz) against the same prediction without it, interleaved N times;
# medians, the trace's size and event count. Fails over the issue's trace budget (1 s wall,
# 150 MB peak RSS). The prediction is given after `--`; bench/analytical_trace.sh and
# bench/tpu_trace.sh name theirs.
# Usage: bench/trace_cost.sh build/cli/xpusim N -- predict ARGS...
set -eu
bin="$1" n="$2"
shift 3
args=("$@")
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
run() {  # run LABEL EXTRA...: appends "label wall_s rss_kb"
  local label="$1"; shift
  /usr/bin/time -f "$label %e %M" -a -o "$dir/times" "$bin" "${args[@]}" "$@" >/dev/null
}
for _ in $(seq "$n"); do
  run plain
  run trace --trace "$dir/t.json"
  run trace_gz --trace "$dir/t.json.gz"
done
python3 - "$dir/times" "$dir/t.json" "$dir/t.json.gz" <<'PY'
import json, os, statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
by = {}
for label, wall, rss in rows:
    by.setdefault(label, []).append((float(wall), int(rss)))
events = len(json.load(open(sys.argv[2]))["traceEvents"])
print(f"trace: {events} events, {os.path.getsize(sys.argv[2]) / 1e6:.2f} MB json, "
      f"{os.path.getsize(sys.argv[3]) / 1e6:.2f} MB gz")
ok = True
for label in ("plain", "trace", "trace_gz"):
    wall = statistics.median(w for w, _ in by[label])
    rss = max(r for _, r in by[label]) / 1024
    print(f"{label:9s} median wall {wall:.3f} s, peak RSS {rss:.1f} MB")
    if label != "plain" and (wall > 1.0 or rss > 150):
        ok = False
print("within 1 s and 150 MB" if ok else "OVER the 1 s / 150 MB budget")
sys.exit(0 if ok else 1)
PY
