#!/usr/bin/env bash
# Start-up of commands that never use a GPU (issue 17): wall time and peak RSS of
# `xpusim --help` and `xpusim models`, median of REPS runs each (GNU time -v), against the
# goals < 20 ms and < 40 MB. Also `xpusim backends`, which loads the cuda engine module (and
# with it cuDNN, cuBLAS and NCCL), as the reference of what the other commands now avoid.
# Usage: bench/startup.sh build/cli/xpusim [REPS]. Exit 1 when a goal is missed.
set -u
bin="$1" reps="${2:-5}"
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (/usr/bin/time, Debian package time)"; exit 2; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
measure() {  # prints "median_ms median_rss_mb median_cpu_ms" of `xpusim "$@"`
  local ms=() kb=() cpu=() out
  for ((i = 0; i < reps; ++i)); do
    # Wall time from bash's microsecond clock (GNU time's %e has 10 ms steps); RSS from time -v.
    local t0=$EPOCHREALTIME
    "$bin" "$@" >/dev/null 2>&1
    local t1=$EPOCHREALTIME
    ms+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", (b - a) * 1000}')")
    # CPU time (user + system, 10 ms steps): what the start-up costs when the machine is loaded
    # and wall time mostly measures waiting for a core.
    /usr/bin/time -f '%M %U %S' -o "$tmp" "$bin" "$@" >/dev/null 2>&1
    kb+=("$(tail -1 "$tmp" | awk '{print $1}')"); cpu+=("$(tail -1 "$tmp" | awk '{print ($2 + $3) * 1000}')")
  done
  echo "$(printf '%s\n' "${ms[@]}" | median) $(printf '%s\n' "${kb[@]}" | median | awk '{printf "%.1f", $1 / 1024}') $(printf '%s\n' "${cpu[@]}" | median)"
}
tmp=$(mktemp); trap 'rm -f "$tmp"' EXIT
fail=0
printf '%-28s %10s %12s %10s\n' command median_ms peak_rss_mb cpu_ms
for cmd in "--help" "models" "backends"; do
  read -r ms mb cpu < <(measure $cmd)
  printf '%-28s %10s %12s %10s\n' "xpusim $cmd" "$ms" "$mb" "$cpu"
  if [[ $cmd != backends ]]; then
    awk -v m="$ms" 'BEGIN {exit !(m >= 20)}' && { echo "  goal missed: start-up >= 20 ms"; fail=1; }
    awk -v r="$mb" 'BEGIN {exit !(r >= 40)}' && { echo "  goal missed: peak RSS >= 40 MB"; fail=1; }
  fi
done
# The floor on this machine now: a process that does nothing (fork + exec + exit).
t0=$EPOCHREALTIME; for ((i = 0; i < reps; ++i)); do /bin/true; done; t1=$EPOCHREALTIME
awk -v a="$t0" -v b="$t1" -v n="$reps" 'BEGIN {printf "%-28s %10.1f   (floor: fork + exec of a no-op)\n", "/bin/true", (b - a) * 1000 / n}'
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (the machine may be shared: quote the load with the times)"
exit $fail
