#!/usr/bin/env bash
# Issue 35's corpus: every torchvision 0.14 classification and segmentation model, nn.Transformer
# (Encoder) and BERT/GPT-style modules, exported by scripts/onnx_corpus.py into OUT_DIR (cached
# per torch/torchvision version; re-exported when the script's EXPORT_VERSION changes) and
# checked: import, parameters = torch's, product FLOPs within 1%, predict on an analytical GPU
# and the TPU engine. SET default is label onnx, large is label corpus_large.
# Usage: corpus.sh XPUSIM_BIN SOURCE_DIR OUT_DIR SET [MIN_PASS]   (SET: default | large | all; MIN_PASS
# percent of the torchvision models that must pass, default 95)
# Exit 77 (ctest: SKIPPED) when no python3 here can import torch and torchvision.
set -euo pipefail
bin="$1"; src="$2"; out="$3"; set="$4"; min_pass="${5:-95}"
source "$(dirname "${BASH_SOURCE[0]}")/torch_python.sh"
exec "$py" "$src/scripts/onnx_corpus.py" check "$bin" "$out" --set "$set" --min-pass "$min_pass"
