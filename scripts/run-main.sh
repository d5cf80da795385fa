#!/usr/bin/env bash
# Installs dependencies, builds, and runs the main job: the default comparison study
# (Cloud TPU v2-8 vs AWS p3.8xlarge on ResNet-50, throughputs predicted by xpusim).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
./build/cli/xpusim compare configs/studies/riseml_resnet50.yaml --format markdown
