#!/usr/bin/env bash
# Interrupt and resume of `xpusim validate --measure cpu --measure-out FILE` (issue 16), on two
# tiny cases with two repeats (runs go in rounds: case 1, case 2, case 1, case 2). Stopped after
# 3 runs (XPUSIM_TEST_INTERRUPT_AFTER=3 raises a real SIGINT after the 3rd run): exit 130, case
# 1 finished, case 2 with one partial run in FILE. --resume runs only the missing run: case 1's
# row is kept byte for byte (a re-measurement would change its timings) and case 2's median
# includes the run from before the interruption. Other options are refused.
#   measure_resume.sh XPUSIM_BIN
set -u
bin="$1"
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
out="$dir/rows.csv"
base=(validate --measure cpu --measure-cases mnist_mlp:8,imdb_fasttext:8 --measure-steps 1 --measure-warmup 0
      --threads 1 --measure-out "$out" --format json)
args=("${base[@]}" --measure-repeats 2)
fail=0
XPUSIM_TEST_INTERRUPT_AFTER=3 "$bin" "${args[@]}" >/dev/null 2>"$dir/err"; rc=$?
[[ $rc == 130 ]] || { echo "interrupted run: exit $rc, expected 130"; cat "$dir/err"; exit 1; }
grep -q "measure stopped after 3 runs: 1 of 2 cases finished" "$dir/err" || { echo "no summary:"; cat "$dir/err"; fail=1; }
row1=$(grep "^.*,mnist_mlp," "$out"); row2=$(grep ",imdb_fasttext," "$out")
[[ "$row1" == *"repeats=2 median of"* ]] || { echo "case 1 not finished: $row1"; fail=1; }
partial=$(sed -n 's/.* partial runs: \([0-9.e+-]*\) |.*/\1/p' <<<"$row2")
[[ -n "$partial" ]] || { echo "case 2 has no partial run: $row2"; fail=1; }
# Other options (another repeat count) must not continue these rows, nor touch them.
cp "$out" "$dir/before.csv"
"$bin" "${base[@]}" --measure-repeats 3 --resume >/dev/null 2>"$dir/err"; rc=$?
[[ $rc == 2 ]] && grep -q "was measured with other inputs" "$dir/err" || { echo "other options: exit $rc"; cat "$dir/err"; fail=1; }
cmp -s "$out" "$dir/before.csv" || { echo "a refused resume modified the rows"; fail=1; }
# The resumed run stops after its first run again if it had more than one to do.
XPUSIM_TEST_INTERRUPT_AFTER=2 "$bin" "${args[@]}" --resume >"$dir/resumed.json" 2>"$dir/err"; rc=$?
[[ $rc == 0 ]] || { echo "resumed run: exit $rc (it should have had exactly one run to do)"; cat "$dir/err"; fail=1; }
[[ "$(grep "^.*,mnist_mlp," "$out")" == "$row1" ]] || { echo "finished case 1 was measured again"; fail=1; }
row2b=$(grep ",imdb_fasttext," "$out")
median=$(python3 -c "print('%.6g' % float('$partial'))")
[[ "$row2b" == *"repeats=2 median of $median "* ]] || { echo "case 2 lost its partial run $median: $row2b"; fail=1; }
[[ $fail == 0 ]] && echo "measure resume: ok (partial run $partial kept)"
exit $fail
