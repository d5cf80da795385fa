#!/usr/bin/env bash
# Configures and builds xpusim into build/ (Release, Ninja, ccache when present).
# Extra arguments go to cmake's configure step, e.g. -DXPUSIM_WITH_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${XPUSIM_BUILD_TYPE:-Release}" "$@" >/dev/null
cmake --build build -j "${XPUSIM_JOBS:-$(nproc)}"
