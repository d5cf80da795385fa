#!/usr/bin/env bash
# `xpusim run --backend cpu --model tiny_transformer --steps 5`: the real CPU backend trains the
# causal LM (per-timestep labels, position ids) on the run command's fixed synthetic batch.
# The JSON report names the ISA oneDNN dispatches to (one of the names cpu_isa_name() gives)
# and the loss of the last step is below the first step's.
# Usage: run_cpu_transformer.sh XPUSIM
set -euo pipefail
bin="$1"
out="$("$bin" run --backend cpu --model tiny_transformer --batch 8 --steps 5 --warmup 0 --threads 2 --format json)"
python3 - "$out" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
isa = r.get("isa")
known = {"sse41", "avx", "avx2", "avx512_core", "avx512_core_vnni", "avx512_core_bf16", "avx512_core_amx", "other"}
if isa not in known:
    sys.exit(f"FAIL: isa {isa!r} is not one of {sorted(known)}")
first, last = r["loss_first"], r["loss_last"]
if not last < 0.9 * first:
    sys.exit(f"FAIL: loss did not fall: first {first}, last {last}")
print(f"run cpu tiny_transformer: ok: isa {isa}, loss {first:.3f} -> {last:.3f}, step {r['step_time_s']:.4f} s")
PY
