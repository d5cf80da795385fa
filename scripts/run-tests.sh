#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test group. The README's test command and
# .ci/run both call exactly this script.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
cd build
# Groups by label, fastest first, so a failure shows early; GPU tests skip themselves
# (reported as skipped, never passed) where no CUDA device exists.
ctest --output-on-failure -j "$(nproc)" --timeout 900
