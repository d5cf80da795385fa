#!/usr/bin/env bash
# Installs dependencies, builds, and runs the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
./build/cli/xpusim graph --model resnet50 --batch 32 --totals
