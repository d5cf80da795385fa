#!/usr/bin/env bash
# Side-by-side training-step benchmark: `xpusim run --backend cpu` against PyTorch 1.13
# (Debian python3-torch) on the same machine, models, batches and thread count, synthetic
# data, SGD momentum. Runs are interleaved (xpusim, pytorch, xpusim, ...) REPS times so that
# load from other processes hits both alike; the summary quotes medians.
#   bench/cpu_vs_pytorch.sh [build/cli/xpusim] [REPS=3] [STEPS=3] [WARMUP=1] [THREADS=2]
# Each case runs in every precision of PRECISIONS (default "fp32 bf16"): xpusim --precision bf16
# (native bf16 primitives where the CPU has avx512_core_bf16/AMX, else emulated; its output says
# which) against PyTorch under torch.autocast("cpu", dtype=torch.bfloat16).
# Environment: OUT=FILE keeps the raw JSON lines; CASES="resnet50:16 alexnet:32 vgg16:8 inception_v3:8"
# to choose cases; PRECISIONS="fp32" for one precision. Both sides inherit the environment, so
# OMP_WAIT_POLICY=passive (recorded in each result) makes both frameworks' OpenMP threads sleep
# instead of spin while they wait: on a machine loaded by other processes, spinning threads
# burn the time slices their partners need (see bench/README.md).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
xpusim="${1:-$here/../build/cli/xpusim}"
reps="${2:-3}" steps="${3:-3}" warmup="${4:-1}" threads="${5:-2}"
cases="${CASES:-resnet50:16 alexnet:32 vgg16:8 inception_v3:8}"
precisions="${PRECISIONS:-fp32 bf16}"
out="${OUT:-$(mktemp -d)/results.jsonl}"
echo "results: $out" >&2
for rep in $(seq 1 "$reps"); do
  for c in $cases; do
    for p in $precisions; do
      m="${c%%:*}" b="${c##*:}"
      echo "rep $rep/$reps $m b$b $p: xpusim ($(cut -d' ' -f1 /proc/loadavg) load)" >&2
      "$xpusim" run --backend cpu --model "$m" --batch "$b" --steps "$steps" --warmup "$warmup" \
        --threads "$threads" --precision "$p" --format json | /usr/bin/python3 -c \
        'import json,os,sys; j=json.load(sys.stdin); j["framework"]="xpusim"; j["loadavg_1m"]=float(open("/proc/loadavg").read().split()[0]); j["omp_wait_policy"]=os.environ.get("OMP_WAIT_POLICY","default"); print(json.dumps(j, sort_keys=True))' >>"$out"
      echo "rep $rep/$reps $m b$b $p: pytorch ($(cut -d' ' -f1 /proc/loadavg) load)" >&2
      /usr/bin/python3 "$here/pytorch_train_step.py" --model "$m" --batch "$b" --steps "$steps" \
        --warmup "$warmup" --threads "$threads" --precision "$p" | /usr/bin/python3 -c \
        'import json,os,sys; j=json.load(sys.stdin); j["loadavg_1m"]=float(open("/proc/loadavg").read().split()[0]); j["omp_wait_policy"]=os.environ.get("OMP_WAIT_POLICY","default"); print(json.dumps(j, sort_keys=True))' >>"$out"
    done
  done
done
/usr/bin/python3 "$here/summarize_cpu_bench.py" "$out" "$threads"
