#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) into build-fuzz/ and runs each for a
# while on a copy of its seed corpus (tests/fuzz/corpus/<target>/). CI runs them briefly;
# a long run: XPUSIM_FUZZ_SECONDS=3600 scripts/run-fuzzers.sh [target...], or a fixed number
# of executions: XPUSIM_FUZZ_RUNS=1000000 scripts/run-fuzzers.sh [target...] (no time limit).
# XPUSIM_FUZZ_JOBS=N runs N libFuzzer workers per target on one shared corpus (one core each;
# XPUSIM_FUZZ_RUNS is then the total, split evenly between them); their logs are
# build-fuzz/jobs/<target>/fuzz-<i>.log.
# A finding (crash, sanitizer report, an exception other than a clean user error, a
# timeout) fails the script and leaves the input in build-fuzz/findings/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
seconds="${XPUSIM_FUZZ_SECONDS:-30}"
runs="${XPUSIM_FUZZ_RUNS:-}"
jobs="${XPUSIM_FUZZ_JOBS:-1}"
[[ "$jobs" =~ ^[1-9][0-9]?$ ]] || { echo "run-fuzzers.sh: XPUSIM_FUZZ_JOBS must be 1..99, got '$jobs'" >&2; exit 2; }
[[ -z "$runs" || "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "run-fuzzers.sh: XPUSIM_FUZZ_RUNS must be a positive integer, got '$runs'" >&2; exit 2; }
limit=(-max_total_time="$seconds")
[[ -n "$runs" ]] && limit=(-runs="$(( (runs + jobs - 1) / jobs ))" -max_total_time=0)
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=(model_yaml device_yaml system_yaml study_yaml reference_csv topology_csv onnx
  framework_yaml sweep_yaml pricing_yaml convergence_yaml calibration_yaml train_log_tsv datasets_yaml checkpoint
  sweep_rows)
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
  -DXPUSIM_BUILD_FUZZERS=ON -DXPUSIM_BUILD_TESTS=OFF -DXPUSIM_WITH_CUDA=OFF -DXPUSIM_BUILD_BENCH=OFF \
  -DXPUSIM_WITH_PYTHON=OFF -DXPUSIM_WITH_MPI=OFF -DXPUSIM_UNITY_BUILD="${XPUSIM_UNITY_BUILD:-ON}" >/dev/null
cmake --build build-fuzz -j "${XPUSIM_JOBS:-$(nproc)}" --target "${targets[@]/#/xpusim_fuzz_}"
export XPUSIM_CONFIG_DIR="$PWD/configs"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
# One target: its verdict goes to build-fuzz/result-<target>.txt, its exit status says whether
# it found something. Targets run XPUSIM_FUZZ_PARALLEL at a time (default: cores / workers):
# each libFuzzer process is single-threaded, so two cores fuzz two loaders at once.
fuzz_one() {
  local t="$1" work findings log max_len start flags rc logs l execs rate jdir root
  work="build-fuzz/corpus/$t"; findings="build-fuzz/findings/$t"
  mkdir -p "$work" "$findings"
  cp -n tests/fuzz/corpus/"$t"/* "$work"/ 2>/dev/null || true
  log="build-fuzz/fuzz-$t.log"
  # Inputs up to twice the largest seed: longer ones only slow each execution down.
  max_len=4096                            # YAML seeds: up to 3 KB
  [[ "$t" == *_csv || "$t" == *_tsv ]] && max_len=8192  # CSV seeds: up to 7 KB
  [[ "$t" == checkpoint ]] && max_len=8192  # seed: a hand-made 2-epoch checkpoint (~1 KB)
  [[ "$t" == sweep_rows ]] && max_len=8192
  [[ "$t" == onnx ]] && max_len=65536  # seeds: the CNN export (8 KB) and two one-layer Transformers (63 KB)
  # -timeout: one input taking over 10 s is a finding (a hang); -rss_limit_mb bounds memory.
  start=$SECONDS
  flags=("${limit[@]}" -timeout=10 -rss_limit_mb=2048 -max_len="$max_len" -print_final_stats=1)
  if (( jobs == 1 )); then
    rc=0
    build-fuzz/tests/fuzz/xpusim_fuzz_"$t" "$work" "${flags[@]}" -artifact_prefix="$findings/" >"$log" 2>&1 || rc=$?
    logs=("$log")
  else
    # libFuzzer writes each worker's log to fuzz-<i>.log in the current folder.
    root="$PWD"; jdir="$root/build-fuzz/jobs/$t"; rm -rf "$jdir"; mkdir -p "$jdir"; touch "$jdir/.start"
    rc=0
    (cd "$jdir" && "$root"/build-fuzz/tests/fuzz/xpusim_fuzz_"$t" "$root/$work" "${flags[@]}" \
       -artifact_prefix="$root/$findings/" -jobs="$jobs" -workers="$jobs") >"$log" 2>&1 || rc=$?
    logs=("$jdir"/fuzz-*.log)
    # A finding: the driver's non-zero exit (a worker failed), a worker log without final
    # stats (killed), or an artifact written during this run.
    for l in "${logs[@]}"; do grep -q 'stat::number_of_executed_units' "$l" || rc=1; done
    [[ -z "$(find "$findings" -type f -newer "$jdir/.start")" ]] || rc=1
  fi
  if (( rc == 0 )); then
    execs=$(cat "${logs[@]}" | awk '/stat::number_of_executed_units/ {s += $2} END {print s}')
    rate=$(cat "${logs[@]}" | awk '/stat::average_exec_per_sec/ {s += $2} END {print s}')
    echo "fuzz $t: ok, ${execs:-?} executions in $((SECONDS - start)) s (${rate:-?} exec/s, $jobs worker(s))"
  else
    echo "fuzz $t: FINDING (see ${logs[*]} and $findings/)"; tail -n 40 "${logs[@]}"; return 1
  fi
}
parallel="${XPUSIM_FUZZ_PARALLEL:-$(( $(nproc) / jobs ))}"
(( parallel >= 1 )) || parallel=1
running=0
for t in "${targets[@]}"; do
  if (( running >= parallel )); then wait -n || true; running=$((running - 1)); fi
  rm -f "build-fuzz/rc-$t"
  { if fuzz_one "$t" >"build-fuzz/result-$t.txt" 2>&1; then echo 0; else echo 1; fi >"build-fuzz/rc-$t"; } &
  running=$((running + 1))
done
wait
status=0
for t in "${targets[@]}"; do
  cat "build-fuzz/result-$t.txt"
  [[ "$(cat "build-fuzz/rc-$t" 2>/dev/null)" == 0 ]] || status=1
done
exit $status
