#!/usr/bin/env bash
# The GPU measurement scripts (bench/gpu_measure.py, bench/gpu_batch_scaling.py) at tiny sizes on
# the CPU (--smoke), so a change to them is run before it reaches a lent GPU. Skipped (77) where
# PyTorch is not importable (the CI machines; `XPUSIM_INSTALL_BENCH=1 scripts/install-deps.sh`
# installs Debian's python3-torch). Usage: gpu_scripts_smoke.sh PYTHON SOURCE_DIR
set -u
src=$2
# CMake's Python, else the system one (Debian's python3-torch installs there).
py=""
for cand in "$1" /usr/bin/python3; do
  if "$cand" -c "import torch" 2>/dev/null; then py=$cand; break; fi
done
[ -n "$py" ] || { echo "PyTorch is not importable by $1 or /usr/bin/python3: skipped"; exit 77; }
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
"$py" "$src/bench/gpu_batch_scaling.py" "$out/scaling" --smoke || { echo "gpu_batch_scaling.py --smoke failed"; exit 1; }
rows=$(( $(wc -l < "$out/scaling/scaling.csv") - 1 ))
[ "$rows" -eq 2 ] || { echo "scaling.csv: expected 2 rows, got $rows"; cat "$out/scaling/scaling.csv"; exit 1; }
[ "$(wc -l < "$out/scaling/kernels.jsonl")" -eq 2 ] || { echo "kernels.jsonl: expected 2 cases"; exit 1; }
"$py" "$src/bench/gpu_measure.py" --out "$out/measure" --smoke --only train || { echo "gpu_measure.py --smoke failed"; exit 1; }
# The three Transformer heads (classifier, LM, pre-training) must have run; torchvision's
# ResNet-50 case runs only where torchvision is installed.
for m in bert_base gpt2 bert_large_pretraining; do
  grep -q ",$m," "$out/measure/train.csv" || { echo "train.csv lacks $m"; cat "$out/measure/train.csv"; exit 1; }
done
echo "gpu scripts smoke: ok"
