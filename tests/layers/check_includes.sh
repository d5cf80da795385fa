#!/usr/bin/env bash
# Enforces the layer picture of docs/architecture.md: a file may include its own folder and
# layers below it, never a layer above, and engines (siblings on one layer) never include each
# other. Prints each offending include as FILE:LINE: include "X" (LAYER may not include LAYER)
# and exits 1 if there is any. Usage: check_includes.sh [REPO_ROOT]
set -euo pipefail
root="${1:-$(dirname "$0")/../..}"
cd "$root"

# Folder -> rank; equal ranks are siblings that may not include each other.
layer_of() {
  case "$1" in
    common/*) echo "common 0" ;;
    models/*) echo "models 1" ;;
    engine/*) echo "engine 2" ;;
    parallel/*) echo "parallel 3" ;;
    devices/analytical/*) echo "devices/analytical 4" ;;
    devices/cpu/*) echo "devices/cpu 4" ;;
    devices/cuda/*) echo "devices/cuda 4" ;;
    sim/tpu/*) echo "sim/tpu 4" ;;
    predict/*) echo "predict 5" ;;
    costmodel/*) echo "costmodel 6" ;;
    validation/*) echo "validation 7" ;;
    sweep/*) echo "sweep 8" ;;
    cli/*) echo "cli 9" ;;
    python/*) echo "python 10" ;;
    *) echo "" ;;
  esac
}

bad=0
checked=0
while IFS= read -r file; do
  read -r from_layer from_rank <<<"$(layer_of "$file")"
  [[ -z "${from_layer:-}" ]] && continue
  checked=$((checked + 1))
  while IFS=: read -r line inc; do
    target=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"$inc")
    read -r to_layer to_rank <<<"$(layer_of "$target")"
    [[ -z "${to_layer:-}" ]] && continue
    [[ "$to_layer" == "$from_layer" ]] && continue
    if (( to_rank >= from_rank )); then
      echo "$file:$line: include \"$target\" ($from_layer may not include $to_layer)"
      bad=1
    fi
  done < <(grep -n '^[[:space:]]*#include "' "$file" || true)
done < <(git ls-files -- '*.cpp' '*.hpp' '*.cu' '*.cuh' 2>/dev/null || find . -name '*.[ch]pp' | sed 's#^\./##')

# Command-line words live in cli/: a library names the field (FieldError), cli/ the flag.
while IFS= read -r hit; do
  echo "$hit: a \"-- literal below cli/ (throw FieldError naming the field instead)"
  bad=1
done < <(git ls-files -- '*.cpp' '*.hpp' '*.cu' '*.cuh' 2>/dev/null | grep -v '^cli/\|^tests/\|^bench/' |
         xargs -r grep -n '"--' 2>/dev/null || true)

if (( checked == 0 )); then echo "check_includes: no source files found under $root" >&2; exit 1; fi
if (( bad )); then exit 1; fi
echo "check_includes: $checked files, every include points down the layers, no \"-- literal below cli/"
