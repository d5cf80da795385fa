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
    compare/*) echo "compare 7" ;;
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

# Files, not only folders. A header and its source (the same path without the extension) are
# one unit. A loop of includes between units of different folders (models/zoo ->
# models/onnx/onnx_import -> models/zoo was one) is an error, and so is any loop between
# headers; units of one folder are one library and may lean on each other's sources.
# Strongly connected components (Tarjan) of the unit graph, one line each.
loops() {  # stdin: "FROM TO" edges -> stdout: the members of each loop, space-separated
  awk '{ if (!($1 in id)) { id[$1] = ++n; name[n] = $1 }
         if (!($2 in id)) { id[$2] = ++n; name[n] = $2 }
         if (id[$1] != id[$2]) adj[id[$1], ++deg[id[$1]]] = id[$2] }
       function visit(v,   i, w) {
         idx[v] = low[v] = ++counter; stack[++sp] = v; on[v] = 1
         for (i = 1; i <= deg[v]; i++) {
           w = adj[v, i]
           if (!(w in idx)) { visit(w); if (low[w] < low[v]) low[v] = low[w] }
           else if (on[w] && idx[w] < low[v]) low[v] = idx[w]
         }
         if (low[v] == idx[v]) {
           members = ""; count = 0
           do { w = stack[sp--]; on[w] = 0; members = name[w] (members == "" ? "" : " ") members; count++ } while (w != v)
           if (count > 1) print members
         }
       }
       END { for (v = 1; v <= n; v++) if (!(v in idx)) visit(v) }'
}
edges=$(mktemp); trap 'rm -f "$edges"' EXIT
files=$(git ls-files -- '*.cpp' '*.hpp' '*.cu' '*.cuh' 2>/dev/null || find . -name '*.[ch]pp' | sed 's#^\./##')
while IFS= read -r file; do
  [[ "$file" == tests/* || "$file" == bench/* ]] && continue
  while IFS= read -r target; do
    grep -qxF "$target" <<<"$files" && echo "$file $target"
  done < <(sed -nE 's/^[[:space:]]*#include "([^"]+)".*/\1/p' "$file")
done <<<"$files" >"$edges"
while IFS= read -r loop; do
  folders=$(tr ' ' '\n' <<<"$loop" | xargs -n1 dirname | sort -u | wc -l)
  if (( folders > 1 )); then echo "include loop between units of different folders: $loop"; bad=1; fi
done < <(sed -E 's/\.[a-z]+( |$)/\1/g' "$edges" | loops)
while IFS= read -r loop; do
  echo "include loop between headers: $loop"; bad=1
done < <(grep -E '\.(hpp|cuh) [^ ]+\.(hpp|cuh)$' "$edges" | loops)

# Command-line words live in cli/: a library names the field (FieldError), cli/ the flag. Any
# string literal below cli/ holding --WORD is one ("try a smaller --batch"); python/ is a
# front end above cli/ (its docstrings show commands). Comment lines are not literals.
while IFS= read -r hit; do
  echo "$hit: a --flag in a string literal below cli/ (name the field; cli/ maps it to its flag)"
  bad=1
done < <(git ls-files -- '*.cpp' '*.hpp' '*.cu' '*.cuh' 2>/dev/null | grep -v '^cli/\|^tests/\|^bench/\|^python/' |
         xargs -r grep -nE '"([^"\\]|\\.)*--[a-zA-Z]' 2>/dev/null | grep -vE '^[^:]+:[0-9]+:[[:space:]]*//' || true)

if (( checked == 0 )); then echo "check_includes: no source files found under $root" >&2; exit 1; fi
if (( bad )); then exit 1; fi
echo "check_includes: $checked files, every include points down the layers, no include loop, no --flag literal below cli/"
