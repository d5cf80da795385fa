#!/usr/bin/env bash
# Wall time of one process predicting a ResNet-50 step on a v2-8 with the whole board simulated
# (8 TensorCores, the all-reduce exchanged between them; issue 32), against the 0.5 s goal, and
# the same prediction with core 0 alone (--set simulate_board=false). Median of N runs each.
# Usage: bench/tpu_board.sh XPUSIM [N]
set -euo pipefail
bin=${1:?usage: tpu_board.sh XPUSIM [N]}
n=${2:-7}
args=(predict --device tpu_v2 --count 8 --system cloud_tpu_v2-8 --model resnet50 --batch 128 --precision bf16 --format json)
run() {  # prints "median-wall median-cpu" (seconds) of n processes running "$@"
  local walls=() cpus=() tf
  tf=$(mktemp)
  for _ in $(seq "$n"); do
    /usr/bin/time -f '%e %U %S' -o "$tf" "$@" > /dev/null
    read -r w u s < "$tf"
    walls+=("$w")
    cpus+=("$(echo "$u + $s" | bc -l)")
  done
  rm -f "$tf"
  med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  echo "$(med "${walls[@]}") $(med "${cpus[@]}")"
}
read -r board_wall board_cpu <<< "$(run "$bin" "${args[@]}")"
read -r one_wall one_cpu <<< "$(run "$bin" "${args[@]}" --set simulate_board=false)"
cores=$("$bin" "${args[@]}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["simulated_cores"])')
printf 'v2-8 resnet50 b128 bf16, median of %d processes (load average %s):\n' "$n" "$(cut -d' ' -f1 /proc/loadavg)"
printf '  board (%s cores simulated): %.3f s wall, %.3f s CPU\n' "$cores" "$board_wall" "$board_cpu"
printf '  core 0 alone:               %.3f s wall, %.3f s CPU\n' "$one_wall" "$one_cpu"
# The goal is 0.5 s of wall time on an otherwise idle machine, where wall ~= CPU (one thread);
# on a shared machine the wall time measures the other processes too, so the gate is the CPU time.
awk -v b="$board_cpu" 'BEGIN { exit !(b <= 0.5) }' || { echo "FAIL: board prediction over 0.5 s of CPU" >&2; exit 1; }
