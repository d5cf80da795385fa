#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test group. The README's test command and
# .ci/run both call exactly this script.
#   1. Release build, every test (ctest)
#   2. Sanitize build (ASan + UBSan, no CUDA, no bench) into build-asan/: unit and golden tests
#   3. libFuzzer targets of every loader, briefly (scripts/run-fuzzers.sh)
# XPUSIM_SKIP_SANITIZE=1 / XPUSIM_SKIP_FUZZ=1 skip steps 2 / 3 (local runs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# ccache keys compiles by paths relative to the clone (CCACHE_BASEDIR, and -ffile-prefix-map
# in CMakeLists.txt for the -g trees), so a fresh clone at a new path still hits the cache.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
# The tests check this checkout's configs/ (compiled in as the default); a configuration
# directory inherited from the caller's shell, often a relative one, would point them elsewhere.
if [[ -n "${XPUSIM_CONFIG_DIR:-}" ]]; then
  echo "run-tests: ignoring XPUSIM_CONFIG_DIR=$XPUSIM_CONFIG_DIR (the tests use this checkout's configs/)"
  unset XPUSIM_CONFIG_DIR
fi
start=$(date +%s)
bash scripts/build.sh
echo "run-tests: release build took $(( $(date +%s) - start )) s"
start=$(date +%s)
(
  cd build
  # GPU tests skip themselves (reported as skipped, never passed) where no CUDA device exists.
  # Three groups run on request only (tests/CMakeLists.txt; `ctest -L slow` runs them all):
  # corpus_large (the 65 torchvision models outside the default ONNX set, ~13 min of CPU cold),
  # cpu_train_slow (native bf16 Fashion-MNIST to 0.90 accuracy, 436 s on a Xeon without AMX) and
  # sweep_large (the 10,240-point TPU + GPU sweep, ~5 min).
  ctest --output-on-failure -j "$(nproc)" --timeout 900 -LE "^(corpus_large|cpu_train_slow|sweep_large)$"
)
echo "run-tests: release tests took $(( $(date +%s) - start )) s"
if [[ "${XPUSIM_SKIP_SANITIZE:-0}" != "1" ]]; then
  start=$(date +%s)
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Sanitize -DXPUSIM_WITH_CUDA=OFF -DXPUSIM_BUILD_BENCH=OFF \
    -DXPUSIM_WITH_PYTHON=OFF -DXPUSIM_WITH_MPI=OFF -DXPUSIM_UNITY_BUILD="${XPUSIM_UNITY_BUILD:-ON}" >/dev/null
  cmake --build build-asan -j "$(nproc)" --target xpusim xpusim_unit_tests xpusim_cpu_tests xpusim_json_compare
  # Two cases throw a C++ exception after SystemC threads ran in the process: SystemC's
  # coroutine stacks (QuickThreads in Debian's libsystemc) make GCC 12's ASan report a
  # stack-buffer-overflow inside its own sigaltstack interceptor on that throw
  # (__asan_handle_no_return -> PlatformUnpoisonStacks), not in xpusim code. They run
  # unsanitized in the Release stage above.
  # The same report, for the same reason, in three tests that run a TPU step and then throw or
  # stat() in the same process: the random-configuration invariants (61 TPU configurations),
  # an inference validate run over a TPU row, and the --vcd-to-/dev/full case of the
  # input/output guards.
  asan_exclude="golden.write_failures|set overrides change device fields and are validated like the file|a waveform is refused after the process"
  asan_exclude+="|invariants: random valid configurations of every engine|validate: infer_throughput rows are predicted as inference passes|reliability.input_output_guards"
  # And a predict on a TPU slice that must refuse a bad count (it throws after TPU steps ran).
  asan_exclude+="|predict on a TPU slice prices the all-reduce over the torus and refuses counts that are not slices"
  # Findings fail the run: UBSan stops at the first report; LeakSanitizer is off because
  # oneDNN and SystemC keep process-lifetime allocations by design.
  (
    cd build-asan
    ASAN_OPTIONS="detect_leaks=0:abort_on_error=1" UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
      ctest --output-on-failure -j "$(nproc)" --timeout 900 -L "unit|golden" -E "$asan_exclude"
  )
  echo "run-tests: sanitizer build and tests took $(( $(date +%s) - start )) s"
fi
if [[ "${XPUSIM_SKIP_FUZZ:-0}" != "1" ]]; then
  start=$(date +%s)
  # 16 targets, 15 s each, two at a time on two cores.
  XPUSIM_FUZZ_SECONDS="${XPUSIM_FUZZ_SECONDS:-15}" bash scripts/run-fuzzers.sh
  echo "run-tests: fuzzers took $(( $(date +%s) - start )) s"
fi
