#!/usr/bin/env bash
# Interrupt and resume of `xpusim compare --out FILE` (issue 16): a run stopped after N rows
# (XPUSIM_TEST_INTERRUPT_AFTER=N raises a real SIGINT in the process after the N-th row, the
# path Ctrl-C takes) exits 130 with the finished rows in FILE; --resume completes it, and the
# row file and stdout are byte-identical to an uninterrupted run's, in CSV and JSON, also
# after two interruptions. A row file written for another study file or configuration is refused.
#   compare_resume.sh XPUSIM_BIN
set -u
bin="$1"
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
fail=0
check() {  # check STUDY FORMAT STOP1 STOP2
  local study="$1" fmt="$2" a="$3" b="$4"
  local full="$dir/$study.full.$fmt" full_out="$dir/$study.full.out"
  "$bin" compare "$study" --format "$fmt" --out "$full" >"$full_out" 2>"$dir/err" ||
    { echo "$study $fmt: uninterrupted run failed"; cat "$dir/err"; fail=1; return; }
  rm -f "$dir/part.$fmt"
  XPUSIM_TEST_INTERRUPT_AFTER=$a "$bin" compare "$study" --format "$fmt" --out "$dir/part.$fmt" >/dev/null 2>"$dir/err"
  rc=$?
  [[ $rc == 130 ]] || { echo "$study $fmt: first run exit $rc, expected 130"; cat "$dir/err"; fail=1; }
  grep -q "xpusim: interrupted: compare stopped after $a of" "$dir/err" || { echo "no summary:"; cat "$dir/err"; fail=1; }
  if [[ $fmt == csv ]]; then
    [[ $(($(wc -l <"$dir/part.csv") - 2)) == "$a" ]] || { echo "$study: $a rows expected in the row file"; fail=1; }
    head -1 "$dir/part.csv" | grep -q "complete=false" || { echo "$study: partial file not marked"; fail=1; }
  fi
  # A second interruption, in the resumed run, after b more rows.
  XPUSIM_TEST_INTERRUPT_AFTER=$b "$bin" compare "$study" --format "$fmt" --out "$dir/part.$fmt" --resume \
    >/dev/null 2>"$dir/err"
  rc=$?
  [[ $rc == 130 ]] || { echo "$study $fmt: second run exit $rc, expected 130"; cat "$dir/err"; fail=1; }
  grep -q "stopped after $((a + b)) of .* ($a resumed)" "$dir/err" || { echo "second summary:"; cat "$dir/err"; fail=1; }
  "$bin" compare "$study" --format "$fmt" --out "$dir/part.$fmt" --resume >"$dir/resumed.out" 2>"$dir/err" ||
    { echo "$study $fmt: resumed run failed"; cat "$dir/err"; fail=1; }
  cmp -s "$full" "$dir/part.$fmt" || { echo "$study $fmt: resumed row file differs"; diff "$full" "$dir/part.$fmt" | head; fail=1; }
  cmp -s "$full_out" "$dir/resumed.out" || { echo "$study $fmt: resumed stdout differs"; diff "$full_out" "$dir/resumed.out" | head; fail=1; }
  echo "$study $fmt: stopped after $a and $((a + b)) rows, resumed: identical"
}
check cloud_cpu_vs_k80 csv 5 17
check titan_rtx_precision json 2 1
# The JSON study has buy-vs-rent rows (computed once every row is there).
grep -q '"breakeven_runs": [0-9]' "$dir/titan_rtx_precision.full.json" || { echo "no buy-vs-rent figure to check"; fail=1; }
# Resuming a complete file changes nothing.
full="$dir/cloud_cpu_vs_k80.full.csv"
cp "$full" "$dir/complete.csv"
"$bin" compare cloud_cpu_vs_k80 --format csv --out "$full" --resume >"$dir/again.out" 2>/dev/null
cmp -s "$dir/cloud_cpu_vs_k80.full.out" "$dir/again.out" && cmp -s "$full" "$dir/complete.csv" ||
  { echo "resuming a complete file changed the output"; fail=1; }
# Another study file (one changed byte) must not continue these rows.
cfg="${XPUSIM_CONFIG_DIR:-$(dirname "$0")/../../configs}"
sed 's/^name: cloud_cpu_vs_k80/name: cloud_cpu_vs_k80 /' "$cfg/studies/cloud_cpu_vs_k80.yaml" >"$dir/edited.yaml"
cp "$full" "$dir/before.csv"
"$bin" compare "$dir/edited.yaml" --format csv --out "$full" --resume >/dev/null 2>"$dir/err"; rc=$?
[[ $rc == 2 ]] && grep -q "was written for other inputs" "$dir/err" || { echo "edited study: exit $rc"; cat "$dir/err"; fail=1; }
cmp -s "$full" "$dir/before.csv" || { echo "a refused resume modified the row file"; fail=1; }
# Nor another configuration (an edited price file) under --config-dir.
cp -r "$cfg" "$dir/cfg"
ls "$dir/cfg/pricing/"*.yaml >/dev/null || { echo "no price files to edit"; fail=1; }
for p in "$dir/cfg/pricing/"*.yaml; do echo "# edited" >>"$p"; break; done
"$bin" --config-dir "$dir/cfg" compare cloud_cpu_vs_k80 --format csv --out "$full" --resume >/dev/null 2>"$dir/err"; rc=$?
[[ $rc == 2 ]] && grep -q "was written for other inputs" "$dir/err" || { echo "edited config: exit $rc"; cat "$dir/err"; fail=1; }
# The unedited copy is the same configuration: it continues (here: a complete file, unchanged).
rm -rf "$dir/cfg"; cp -r "$cfg" "$dir/cfg"
"$bin" --config-dir "$dir/cfg" compare cloud_cpu_vs_k80 --format csv --out "$full" --resume >/dev/null 2>"$dir/err" ||
  { echo "an identical copy of the configs was refused"; cat "$dir/err"; fail=1; }
[[ $fail == 0 ]] && echo "compare resume: ok"
exit $fail
