#!/usr/bin/env bash
# `xpusim run --backend cpu` on a Llama-layout decoder with grouped-query attention (4 query heads
# over 2 key/value heads, RMSNorm, SwiGLU, rotary; tiny_transformer's size): the CPU backend now
# executes the key/value head repeat and its gradient (models/head_repeat.hpp, issue 30d) where
# it refused the data-movement op before. The loss on the fixed batch must fall.
# Usage: run_cpu_gqa.sh XPUSIM WORK_DIR
set -euo pipefail
bin="$1"; work="$2"
mkdir -p "$work"
model="$work/tiny_llama_gqa.yaml"
cat >"$model" <<'YAML'
name: tiny_llama_gqa
family: transformer
dataset: openwebtext
task: sequence
input: [16]
classes: 64
optimizer: adam
params: {vocab: 64, hidden: 32, layers: 2, heads: 4, kv_heads: 2, ffn: 64, max_positions: 16, type_vocab: 0,
         causal: true, pre_norm: true, final_norm: true, pooler: false, head: lm, norm: rms_norm, mlp: swiglu,
         position: rotary, bias: false, tied_embeddings: false, dropout: 0.0, layer_norm_eps: 1.0e-5}
YAML
out="$("$bin" run --backend cpu --model "$model" --batch 8 --steps 5 --warmup 0 --threads 2 --format json)"
python3 - "$out" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
first, last = r["loss_first"], r["loss_last"]
if not last < 0.9 * first:
    sys.exit(f"FAIL: loss did not fall: first {first}, last {last}")
print(f"run cpu tiny_llama_gqa: ok: loss {first:.3f} -> {last:.3f}")
PY
