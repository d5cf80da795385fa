#!/usr/bin/env bash
# A sweep gives the same bytes serially, with --jobs 2, and when a run killed midway (SIGKILL)
# or cut in the middle of a line is completed with --resume. Usage: parallel_and_resume.sh XPUSIM SWEEP.yaml
set -euo pipefail
bin="$1"; sweep="$2"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

for fmt in csv jsonl; do
  "$bin" sweep "$sweep" -o "$tmp/serial.$fmt" --summary json > "$tmp/serial_summary.$fmt.json"
  rows=$(grep -c . "$tmp/serial.$fmt")
  [[ "$rows" -ge 24 ]] || fail "$fmt: only $rows lines"
  grep -q '"pareto_front"' "$tmp/serial_summary.$fmt.json" || fail "no Pareto front in the summary"

  "$bin" sweep "$sweep" -o "$tmp/jobs2.$fmt" --jobs 2 --summary json > "$tmp/jobs2_summary.$fmt.json"
  cmp "$tmp/serial.$fmt" "$tmp/jobs2.$fmt" || fail "$fmt: --jobs 2 differs from serial"
  cmp "$tmp/serial_summary.$fmt.json" "$tmp/jobs2_summary.$fmt.json" || fail "$fmt: --jobs 2 summary differs"

  # Cut in the middle of a line (a run killed while writing), then resume.
  size=$(stat -c %s "$tmp/serial.$fmt")
  head -c $((size / 2 + 7)) "$tmp/serial.$fmt" > "$tmp/cut.$fmt"
  [[ "$(tail -c 1 "$tmp/cut.$fmt" | od -An -c | tr -d ' ')" != '\n' ]] || fail "cut landed on a line end"
  "$bin" sweep "$sweep" -o "$tmp/cut.$fmt" --resume --summary json > "$tmp/cut_summary.$fmt.json" 2> "$tmp/cut.err"
  cmp "$tmp/serial.$fmt" "$tmp/cut.$fmt" || fail "$fmt: resumed (cut) file differs from an uninterrupted run"
  cmp "$tmp/serial_summary.$fmt.json" "$tmp/cut_summary.$fmt.json" || fail "$fmt: resumed summary differs"
  grep -q "resumed" "$tmp/cut.err" || fail "no resume report on stderr"
  # Resuming a complete file runs nothing and changes nothing.
  "$bin" sweep "$sweep" -o "$tmp/cut.$fmt" --resume > /dev/null 2> "$tmp/again.err"
  grep -q " 0 run in" "$tmp/again.err" || fail "$fmt: resuming a complete file ran points: $(cat "$tmp/again.err")"
  cmp "$tmp/serial.$fmt" "$tmp/cut.$fmt" || fail "$fmt: resuming a complete file changed it"
done

# Killed for real (SIGKILL, no chance to clean up) once some rows are out, then resumed. On a
# fast machine these 24 points are all written before the first poll, so this often resumes a
# complete file; tests/reliability/sweep_interrupt.sh kills a 144-point sweep mid-way.
"$bin" sweep "$sweep" -o "$tmp/killed.csv" --jobs 2 > /dev/null 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  [[ -f "$tmp/killed.csv" && $(grep -c . "$tmp/killed.csv" || true) -ge 4 ]] && break
  sleep 0.05
done
kill -KILL "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
lines=$(grep -c . "$tmp/killed.csv" || true)
echo "killed after $lines lines"
"$bin" sweep "$sweep" -o "$tmp/killed.csv" --resume > /dev/null
cmp "$tmp/serial.csv" "$tmp/killed.csv" || fail "resumed (killed) file differs from an uninterrupted run"

# A row file of another sweep is refused, not extended.
# (head reads the file, not a pipe: `sed | head -n 20` under pipefail failed when head closed the
# pipe before sed's last write, a SIGPIPE that ended the script with no message.)
head -n 20 "$tmp/serial.csv" | sed 's/,k80,/,p100_sxm2,/' > "$tmp/other.csv"
if "$bin" sweep "$sweep" -o "$tmp/other.csv" --resume > /dev/null 2> "$tmp/other.err"; then fail "resume accepted another sweep's rows"; fi
grep -q "this sweep's point" "$tmp/other.err" || fail "unexpected message: $(cat "$tmp/other.err")"
echo "sweep parallel and resume: ok"
