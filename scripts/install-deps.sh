#!/usr/bin/env bash
# Installs xpusim's build and test dependencies from Debian packages. Idempotent:
# it runs `apt-get update` (once) and `apt-get install` only when a package is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  libsystemc-dev libboost-graph-dev libyaml-cpp-dev libeigen3-dev catch2
  libdnnl-dev nlohmann-json3-dev libcli11-dev dataset-fashion-mnist zlib1g-dev
  libopenmpi-dev openmpi-bin
  clang libclang-rt-14-dev   # libFuzzer targets (scripts/run-fuzzers.sh)
  pybind11-dev python3-dev
  python3-pandas python3-pil   # tests: CSV loads in pandas; screenshots checked (chromium optional: tests skip)
  python3-pip python3-setuptools python3-wheel python3-venv   # offline `pip install ./python` (README.md)
)
# Optional extras, large (~1 GB): the PyTorch peer for bench/ and the ONNX exports of
# scripts/make_onnx_fixtures.py (ctest -L onnx reports SKIPPED without them):
#   XPUSIM_INSTALL_BENCH=1 scripts/install-deps.sh   (or XPUSIM_INSTALL_TORCH=1)
if [[ "${XPUSIM_INSTALL_BENCH:-0}" == "1" || "${XPUSIM_INSTALL_TORCH:-0}" == "1" ]]; then
  PACKAGES+=(python3-torch python3-torchvision)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
SUDO=""
[[ $(id -u) -ne 0 ]] && SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
