#!/usr/bin/env bash
# Runs one golden case: golden/<case>/args holds the xpusim arguments (one per line).
#   expected.json     -> stdout must match it (subset of keys, numbers within tolerance;
#                        optional `tolerance` file holds the relative tolerance, default 1e-6)
#   expected_exit     -> the exit code must equal it
#   expected_stderr   -> each line must appear in stderr
#   deterministic     -> two runs must give byte-identical stdout
set -u
bin="$1"; dir="$2"
mapfile -t args < "$dir/args"
for i in "${!args[@]}"; do args[$i]="${args[$i]//\${CASE_DIR\}/$dir}"; done
out=$(mktemp); err=$(mktemp)
trap 'rm -f "$out" "$err" "$out.2"' EXIT
"$bin" "${args[@]}" >"$out" 2>"$err"; rc=$?
want_rc=0
[[ -f "$dir/expected_exit" ]] && want_rc=$(cat "$dir/expected_exit")
if [[ "$rc" != "$want_rc" ]]; then
  echo "exit code $rc, expected $want_rc"; echo "--- stderr"; cat "$err"; exit 1
fi
if [[ -f "$dir/expected_stderr" ]]; then
  while IFS= read -r line; do
    [[ -z "$line" ]] && continue
    grep -qF -- "$line" "$err" || { echo "stderr lacks: $line"; echo "--- stderr"; cat "$err"; exit 1; }
  done < "$dir/expected_stderr"
fi
if [[ -f "$dir/expected.json" ]]; then
  tol=1e-6; [[ -f "$dir/tolerance" ]] && tol=$(cat "$dir/tolerance")
  "${XPUSIM_JSON_COMPARE:?}" "$dir/expected.json" "$out" "$tol" || exit 1
fi
if [[ -f "$dir/deterministic" ]]; then
  "$bin" "${args[@]}" >"$out.2" 2>/dev/null
  cmp -s "$out" "$out.2" || { echo "two runs gave different output"; exit 1; }
fi
echo "golden case $(basename "$dir"): ok"
