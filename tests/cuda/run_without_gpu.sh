#!/usr/bin/env bash
# CLI contract of the cuda backend on a machine without a GPU: `xpusim backends` lists it as
# compiled but unavailable with a reason, and `xpusim run --backend cuda` exits 3 with
# "no CUDA device: <reason>" (with --task inference too). On a machine with a GPU this check does not apply: exit 77
# (ctest SKIP_RETURN_CODE) with the reason printed.
set -u
bin="$1"
json=$("$bin" backends --format json) || { echo "backends failed"; exit 1; }
entry=$(printf '%s\n' "$json" | tr -d '\n' | grep -o '{[^{}]*"name": *"cuda"[^{}]*}')
[[ -n "$entry" ]] || { echo "backends lists no cuda entry: $json"; exit 1; }
grep -q '"compiled": *true' <<<"$entry" || { echo "cuda not compiled: $entry"; exit 1; }
if grep -q '"available": *true' <<<"$entry"; then
  echo "SKIP: a CUDA device is present; the no-device contract is not testable here"
  exit 77
fi
err=$(mktemp); trap 'rm -f "$err"' EXIT
"$bin" run --backend cuda --model mnist_mlp --batch 8 --steps 1 --format json >/dev/null 2>"$err"; rc=$?
[[ $rc -eq 3 ]] || { echo "exit code $rc, expected 3"; cat "$err"; exit 1; }
grep -q "no CUDA device: ." "$err" || { echo "stderr lacks 'no CUDA device: <reason>'"; cat "$err"; exit 1; }
# --task inference is accepted by the cuda backend: the same contract (exit 3, not a flag error).
"$bin" run --backend cuda --model mnist_mlp --batch 8 --steps 1 --task inference --format json >/dev/null 2>"$err"; rc=$?
[[ $rc -eq 3 ]] || { echo "--task inference: exit code $rc, expected 3"; cat "$err"; exit 1; }
grep -q "no CUDA device: ." "$err" || { echo "--task inference: stderr lacks 'no CUDA device'"; cat "$err"; exit 1; }
echo "ok: $(cat "$err")"
