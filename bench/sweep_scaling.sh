#!/usr/bin/env bash
# Points/s of `xpusim sweep` with 1 and 2 worker processes (--jobs), on TPU-only and
# analytical-only sweeps, runs interleaved REPS times; prints the median points/s and the
# 2-vs-1 ratio (goal >= 1.8 on 2 free cores). Also mpirun -np 2 when xpusim has MPI.
# Usage: bench/sweep_scaling.sh build/cli/xpusim [REPS]
set -euo pipefail
bin="$1"; reps="${2:-3}"
here="$(cd "$(dirname "$0")" && pwd)"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
rate() {  # points/s of one run: rate SWEEP [LAUNCHER...] -- [FLAGS...]
  local sweep="$1"; shift
  local pre=() post=()
  while [[ $# -gt 0 && "$1" != "--" ]]; do pre+=("$1"); shift; done
  [[ $# -gt 0 ]] && shift
  post=("$@")
  "${pre[@]}" "$bin" sweep "$here/$sweep" -o "$tmp/out.csv" "${post[@]}" > /dev/null 2> "$tmp/err" || return 1
  sed -nE 's/.* run in [0-9.]+ s \(([0-9.]+) points\/s.*/\1/p' "$tmp/err" | tail -1
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
mpi_flags=(--oversubscribe); [[ $(id -u) -eq 0 ]] && mpi_flags+=(--allow-run-as-root)
have_mpi=0
if command -v mpirun > /dev/null && "$bin" sweep "$here/sweep_tpu.yaml" -o "$tmp/x.csv" --dry-run | grep -q "MPI built"; then
  have_mpi=1
fi
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); cores: $(nproc)"
for sweep in sweep_tpu.yaml sweep_analytical.yaml; do
  n=$("$bin" sweep "$here/$sweep" -o "$tmp/x.csv" --dry-run | sed -nE 's/.*: ([0-9]+) points.*/\1/p')
  : > "$tmp/j1"; : > "$tmp/j2"; : > "$tmp/m2"
  for _ in $(seq 1 "$reps"); do
    rate "$sweep" -- >> "$tmp/j1"
    rate "$sweep" -- --jobs 2 >> "$tmp/j2"
    if (( have_mpi )); then rate "$sweep" mpirun "${mpi_flags[@]}" -np 2 -- >> "$tmp/m2"; fi
  done
  j1=$(median < "$tmp/j1"); j2=$(median < "$tmp/j2")
  printf '%-24s %5s points  1 process %8.2f points/s  --jobs 2 %8.2f points/s  ratio %.2f\n' \
    "$sweep" "$n" "$j1" "$j2" "$(awk -v a="$j2" -v b="$j1" 'BEGIN {print a / b}')"
  if (( have_mpi )); then
    m2=$(median < "$tmp/m2")
    printf '%-24s %5s points  mpirun -np 2 %8.2f points/s  ratio %.2f\n' "$sweep" "$n" "$m2" \
      "$(awk -v a="$m2" -v b="$j1" 'BEGIN {print a / b}')"
  fi
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
