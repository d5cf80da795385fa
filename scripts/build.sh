#!/usr/bin/env bash
# Configures and builds xpusim into build/ (Release, Ninja, ccache when present).
# Extra arguments go to cmake's configure step, e.g. -DXPUSIM_WITH_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
# Unity builds by default here (a fresh build: ~the heavy headers parsed once per batch of
# sources); XPUSIM_UNITY_BUILD=OFF for incremental work on a few files.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${XPUSIM_BUILD_TYPE:-Release}" \
  -DXPUSIM_UNITY_BUILD="${XPUSIM_UNITY_BUILD:-ON}" "$@" >/dev/null
cmake --build build -j "${XPUSIM_JOBS:-$(nproc)}"
