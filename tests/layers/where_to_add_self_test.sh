#!/usr/bin/env bash
# Shows that check_where_to_add.sh can fail: three broken copies of docs/architecture.md (a
# path that does not exist, an engine missing from layer 4, an op-kind recipe naming the
# wrong file) must each be refused, and the real doc accepted.
# Usage: where_to_add_self_test.sh SOURCE_DIR
set -u
root="${1:?usage: where_to_add_self_test.sh SOURCE_DIR}"
check="$(dirname "$0")/check_where_to_add.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
doc="$root/docs/architecture.md"
bash "$check" "$root" "$doc" >/dev/null || { echo "the real doc is refused"; bash "$check" "$root" "$doc"; exit 1; }
expect_refused() {  # NAME SED-EXPRESSION
  sed "$2" "$doc" >"$tmp/$1.md"
  cmp -s "$doc" "$tmp/$1.md" && { echo "$1: the edit changed nothing (the doc moved on?)"; exit 1; }
  if bash "$check" "$root" "$tmp/$1.md" >"$tmp/$1.out"; then echo "$1: accepted"; exit 1; fi
  echo "$1: refused: $(head -1 "$tmp/$1.out")"
}
expect_refused missing_path 's#`predict/engine_registry.cpp`#`predict/engine_table.cpp`#'
expect_refused missing_engine 's#^ 4  devices/analytical   devices/cpu# 4  devices/analytical#'
expect_refused wrong_op_file 's#counter (`models/work.cpp`)#counter (`models/graph.cpp`)#'
