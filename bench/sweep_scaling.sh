#!/usr/bin/env bash
# Points/s of `xpusim sweep` with 1 and 2 worker processes (--jobs 2, and mpirun -np 2 when
# xpusim has MPI), on a TPU-only (tpu_systemc) and an analytical-only sweep, runs interleaved
# REPS times. Prints median wall-clock points/s and the 2-vs-1 ratio (goal >= 1.8 on 2 free
# cores), and the CPU seconds per 1000 points of each mode: on a busy machine the wall-clock
# ratio measures the other load, while CPU time per point shows what running in two processes
# costs (duplicated graphs, start-up, merging); the last column, 2 x cpu(1) / cpu(2), is the
# ratio two free cores would give with perfectly balanced shares.
# Usage: bench/sweep_scaling.sh build/cli/xpusim [REPS]
set -euo pipefail
bin="$1"; reps="${2:-3}"
here="$(cd "$(dirname "$0")" && pwd)"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# run SWEEP [LAUNCHER...] -- [FLAGS...]: appends "points/s cpu_s" of one run to stdout.
run() {
  local sweep="$1"; shift
  local pre=()
  while [[ $# -gt 0 && "$1" != "--" ]]; do pre+=("$1"); shift; done
  [[ $# -gt 0 ]] && shift
  /usr/bin/time -o "$tmp/time" -f "%U %S" "${pre[@]}" "$bin" sweep "$here/$sweep" -o "$tmp/out.csv" "$@" \
    > /dev/null 2> "$tmp/err" || { cat "$tmp/err" >&2; return 1; }
  local pps cpu
  pps=$(sed -nE 's/.* run in [0-9.]+ s \(([0-9.]+) points\/s.*/\1/p' "$tmp/err" | tail -1)
  cpu=$(awk '{print $1 + $2}' "$tmp/time")
  echo "$pps $cpu"
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
col() { awk -v c="$1" '{print $c}' "$2" | median; }
mpi_flags=(--oversubscribe); [[ $(id -u) -eq 0 ]] && mpi_flags+=(--allow-run-as-root)
have_mpi=0
if command -v mpirun > /dev/null && "$bin" sweep "$here/sweep_tpu.yaml" -o "$tmp/x.csv" --dry-run | grep -q "MPI built"; then
  have_mpi=1
fi
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); cores: $(nproc); reps: $reps"
printf '%-22s %6s  %-13s %10s %8s %14s %12s\n' sweep points mode points/s ratio cpu_s/1000pts free-2-core
for sweep in sweep_tpu.yaml sweep_analytical.yaml; do
  n=$("$bin" sweep "$here/$sweep" -o "$tmp/x.csv" --dry-run | sed -nE 's/.*: ([0-9]+) points.*/\1/p')
  : > "$tmp/j1"; : > "$tmp/j2"; : > "$tmp/m2"
  for _ in $(seq 1 "$reps"); do
    run "$sweep" -- >> "$tmp/j1"
    run "$sweep" -- --jobs 2 >> "$tmp/j2"
    if (( have_mpi )); then run "$sweep" mpirun "${mpi_flags[@]}" -np 2 -- >> "$tmp/m2"; fi
  done
  p1=$(col 1 "$tmp/j1"); c1=$(col 2 "$tmp/j1")
  modes=("1 process:j1" "--jobs 2:j2"); (( have_mpi )) && modes+=("mpirun -np 2:m2")
  for m in "${modes[@]}"; do
    name="${m%%:*}"; f="$tmp/${m##*:}"
    p=$(col 1 "$f"); c=$(col 2 "$f")
    printf '%-22s %6s  %-13s %10.1f %8.2f %14.2f %12.2f\n' "$sweep" "$n" "$name" "$p" \
      "$(awk -v a="$p" -v b="$p1" 'BEGIN {print a / b}')" "$(awk -v c="$c" -v n="$n" 'BEGIN {print 1000 * c / n}')" \
      "$(awk -v c="$c" -v c1="$c1" -v m="$name" 'BEGIN {print (m == "1 process") ? 1 : 2 * c1 / c}')"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
