#!/usr/bin/env bash
# Start-up contract of the cuda engine module (issue 17): the xpusim binary needs none of the
# CUDA libraries (directly or through another library), the module does, the module exports
# only its entry point, and a missing module makes `run --backend cuda` exit 3 naming the
# module's path and the loader's reason while `backends` still lists cuda as unavailable.
set -u
bin="$1" plugin="$2"
source "$(dirname "$0")/../lib/elf_checks.sh"
cuda_libs='lib(cudart|cublas|cublasLt|cudnn|nccl)\.so'
refuse_linked "$bin" "$cuda_libs" "CUDA libraries"
# The pattern must match what the module needs, or the checks above prove nothing.
for lib in cudnn cublas nccl; do
  needed "$plugin" | grep -q "^lib$lib\.so" || { echo "module does not need lib$lib: $(needed "$plugin" | tr '\n' ' ')"; exit 1; }
done
exported=$(xpusim_exports "$plugin")
entry=$(nm -D --defined-only "$plugin" | awk '{print $3}' | grep -cx xpusim_cuda_plugin_create)
[[ $exported -eq 1 && $entry -eq 1 ]] || { echo "module exports $exported xpusim symbols, expected only xpusim_cuda_plugin_create"; exit 1; }

missing=$(mktemp -d); trap 'rm -rf "$missing"' EXIT
export XPUSIM_PLUGIN_DIR="$missing"
"$bin" models >/dev/null || { echo "models failed without the module"; exit 1; }
json=$("$bin" backends --format json) || { echo "backends failed without the module"; exit 1; }
entry=$(printf '%s\n' "$json" | tr -d '\n' | grep -o '{[^{}]*"name": *"cuda"[^{}]*}')
grep -q '"available": *false' <<<"$entry" || { echo "cuda available without its module: $entry"; exit 1; }
grep -q "$missing/xpusim_cuda_plugin.so" <<<"$entry" || { echo "reason does not name the module path: $entry"; exit 1; }
"$bin" run --backend cuda --model mnist_mlp --batch 8 --steps 1 --format json >/dev/null 2>"$missing/err"; rc=$?
[[ $rc -eq 3 ]] || { echo "exit code $rc without the module, expected 3"; cat "$missing/err"; exit 1; }
grep -q "$missing/xpusim_cuda_plugin.so: .*No such file" "$missing/err" ||
  { echo "stderr lacks the module path and dlerror()"; cat "$missing/err"; exit 1; }
echo "ok: $(cat "$missing/err")"
