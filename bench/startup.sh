#!/usr/bin/env bash
# Start-up of commands that never use a GPU (issue 17): median wall time, peak RSS and CPU time
# of `xpusim --help`, `xpusim --version` and `xpusim models --format json` over REPS runs each,
# against the goals < 20 ms and < 40 MB. Also `xpusim backends`, which loads the engine modules
# (SystemC; with the CUDA engine built, cuDNN, cuBLAS and NCCL), as the reference of what the
# other commands avoid.
# Usage: bench/startup.sh [-n REPS] XPUSIM_BIN [OTHER_XPUSIM_BIN...]
#   With several binaries (e.g. main's build and this one) the runs are interleaved, run i of
#   every binary back to back, so that a changing load on a shared machine falls on all alike;
#   compare medians only from one invocation. Exit 1 when the first binary misses a goal.
set -u
reps=50
if [[ "${1:-}" == "-n" ]]; then reps="$2"; shift 2; fi
(( $# >= 1 )) || { echo "usage: $0 [-n REPS] XPUSIM_BIN [OTHER_XPUSIM_BIN...]"; exit 2; }
bins=("$@")
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (/usr/bin/time, Debian package time)"; exit 2; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
have_perf=0
perf stat -x, -e task-clock -o "$tmp/p" /bin/true 2>/dev/null && grep -q task-clock "$tmp/p" && have_perf=1
commands=("--help" "--version" "models --format json" "backends")

for ((i = 0; i < reps; ++i)); do
  for c in "${!commands[@]}"; do
    for b in "${!bins[@]}"; do
      # Wall time from bash's microsecond clock (GNU time's %e has 10 ms steps).
      t0=$EPOCHREALTIME
      ${bins[$b]} ${commands[$c]} >/dev/null 2>&1
      t1=$EPOCHREALTIME
      awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f\n", (b - a) * 1000}' >>"$tmp/ms.$b.$c"
      # Peak RSS (%M, KB), another run.
      /usr/bin/time -f '%M %U %S' -o "$tmp/t" ${bins[$b]} ${commands[$c]} >/dev/null 2>&1
      tail -1 "$tmp/t" | awk '{print $1 / 1024 >> "'"$tmp/mb.$b.$c"'"; print ($2 + $3) * 1000 >> "'"$tmp/cpu10.$b.$c"'"}'
      # CPU time: what start-up costs when the machine is loaded and wall time mostly measures
      # waiting for a core. perf's task-clock (microseconds) when perf works, else GNU time's
      # user + system (10 ms steps), a third run.
      if (( have_perf )); then
        perf stat -x, -e task-clock -o "$tmp/p" ${bins[$b]} ${commands[$c]} >/dev/null 2>&1
        awk -F, '/task-clock/ {print $1}' "$tmp/p" >>"$tmp/cpu.$b.$c"
      fi
    done
  done
done

fail=0
for b in "${!bins[@]}"; do
  echo "${bins[$b]} (median of $reps runs)"
  printf '  %-28s %10s %12s %10s\n' command wall_ms peak_rss_mb cpu_ms
  for c in "${!commands[@]}"; do
    ms=$(median <"$tmp/ms.$b.$c") mb=$(median <"$tmp/mb.$b.$c")
    if (( have_perf )); then cpu=$(median <"$tmp/cpu.$b.$c"); else cpu=$(median <"$tmp/cpu10.$b.$c"); fi
    printf '  %-28s %10.1f %12.1f %10.1f\n' "xpusim ${commands[$c]}" "$ms" "$mb" "$cpu"
    if (( b == 0 )) && [[ ${commands[$c]} != backends ]]; then
      awk -v m="$ms" 'BEGIN {exit !(m >= 20)}' && { echo "    goal missed: start-up >= 20 ms"; fail=1; }
      awk -v r="$mb" 'BEGIN {exit !(r >= 40)}' && { echo "    goal missed: peak RSS >= 40 MB"; fail=1; }
    fi
  done
done
# The floor on this machine now: a process that does nothing (fork + exec + exit).
for ((i = 0; i < reps; ++i)); do
  t0=$EPOCHREALTIME; /bin/true; t1=$EPOCHREALTIME
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f\n", (b - a) * 1000}' >>"$tmp/true"
done
printf '  %-28s %10.1f   (floor: fork + exec of a no-op)\n' "/bin/true" "$(median <"$tmp/true")"
(( have_perf )) || echo "  (cpu_ms from GNU time: 10 ms steps; install perf (linux-perf) for task-clock)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores (the machine may be shared: quote the load with the times)"
exit $fail
