#!/usr/bin/env bash
# Installs dependencies, builds, and runs the main job: the default comparison study
# (Cloud TPU v2-8 vs AWS p3.8xlarge on ResNet-50, throughputs predicted by xpusim).
# Builds only the xpusim binary, without tests, benchmarks, the Python module or the CUDA backend (the study uses
# the SystemC TPU and analytical engines), in its own build-main/ so it never fights the test
# build in build/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
cmake -S . -B build-main -G Ninja -DCMAKE_BUILD_TYPE=Release -DXPUSIM_BUILD_TESTS=OFF -DXPUSIM_BUILD_BENCH=OFF \
  -DXPUSIM_WITH_CUDA=OFF -DXPUSIM_WITH_MPI=OFF -DXPUSIM_WITH_PYTHON=OFF >/dev/null
cmake --build build-main -j "${XPUSIM_JOBS:-$(nproc)}" --target xpusim
./build-main/cli/xpusim compare configs/studies/riseml_resnet50.yaml --format markdown
