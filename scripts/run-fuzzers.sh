#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) into build-fuzz/ and runs each for a
# while on a copy of its seed corpus (tests/fuzz/corpus/<target>/). CI runs them briefly;
# a long run: XPUSIM_FUZZ_SECONDS=3600 scripts/run-fuzzers.sh [target...]
# A finding (crash, sanitizer report, an exception other than a clean user error, a
# timeout) fails the script and leaves the input in build-fuzz/findings/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
seconds="${XPUSIM_FUZZ_SECONDS:-30}"
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=(model_yaml device_yaml system_yaml study_yaml reference_csv topology_csv onnx)
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
  -DXPUSIM_BUILD_FUZZERS=ON -DXPUSIM_BUILD_TESTS=OFF -DXPUSIM_WITH_CUDA=OFF -DXPUSIM_BUILD_BENCH=OFF >/dev/null
cmake --build build-fuzz -j "${XPUSIM_JOBS:-$(nproc)}" --target xpusim_fuzz_all
export XPUSIM_CONFIG_DIR="$PWD/configs"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
status=0
for t in "${targets[@]}"; do
  work="build-fuzz/corpus/$t"; findings="build-fuzz/findings/$t"
  mkdir -p "$work" "$findings"
  cp -n tests/fuzz/corpus/"$t"/* "$work"/ 2>/dev/null || true
  log="build-fuzz/fuzz-$t.log"
  max_len=8192
  [[ "$t" == onnx ]] && max_len=65536  # seeds: the CNN export (8 KB) and two one-layer Transformers (63 KB)
  # -timeout: one input taking over 10 s is a finding (a hang); -rss_limit_mb bounds memory.
  if build-fuzz/tests/fuzz/xpusim_fuzz_"$t" "$work" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -max_len="$max_len" -artifact_prefix="$findings/" -print_final_stats=1 >"$log" 2>&1; then
    execs=$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}')
    echo "fuzz $t: ok, ${execs:-?} executions in ${seconds} s"
  else
    echo "fuzz $t: FINDING (see $log and $findings/)"; tail -40 "$log"; status=1
  fi
done
exit $status
