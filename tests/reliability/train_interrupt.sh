#!/usr/bin/env bash
# Ctrl-C during `xpusim train` (issue 16): exit 130, a message saying where it stopped, the
# log keeps its header and every finished epoch, and an existing log is never truncated
# without --overwrite. Exits 77 (skipped) without the Fashion-MNIST package.
#   train_interrupt.sh XPUSIM_BIN [REPEATS]
# REPEATS > 1 interrupts that many runs, each after a different delay past its first epoch
# (0 to 0.9 s), so the signal lands in training steps, test evaluation and log writes: a
# stop path that corrupts memory only at some of those points shows up as a crash here (a
# flaky heap corruption was once reported under load; stderr of a failing run is printed).
set -u
bin="$1"
repeats="${2:-1}"
[[ -d /usr/share/datasets/fashion-mnist ]] || { echo "no Fashion-MNIST: skipped"; exit 77; }
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
log="$dir/train.tsv"
fail=0
for run in $(seq 1 "$repeats"); do
  rm -f "$log"
  # Enough epochs that it is still running when interrupted.
  "$bin" train --model mnist_mlp --train-limit 4096 --test-limit 256 --batch 32 --epochs-max 500 \
    --target-accuracy 1 --threads 1 --log "$log" >"$dir/out" 2>"$dir/err" &
  pid=$!
  for _ in $(seq 1 300); do [[ -f "$log" && $(wc -l <"$log") -ge 2 ]] && break; sleep 0.1; done
  [[ $repeats -gt 1 ]] && sleep "0.$(((run * 7) % 10))"
  kill -INT "$pid"
  wait "$pid"; rc=$?
  bad=0
  [[ $rc == 130 ]] || { echo "run $run: exit $rc, expected 130"; bad=1; }
  grep -q "xpusim: interrupted: train stopped in epoch" "$dir/err" || { echo "run $run: no interrupt message"; bad=1; }
  head -1 "$log" | grep -q "^epoch" || { echo "run $run: log lost its header"; bad=1; }
  epochs=$(($(wc -l <"$log") - 1))
  [[ $epochs -ge 1 ]] || { echo "run $run: log lost the finished epochs"; bad=1; }
  grep -q "^ *$epochs " "$dir/out" || { echo "run $run: table lacks epoch $epochs:"; cat "$dir/out"; bad=1; }
  [[ $bad == 0 ]] || { echo "--- stderr of run $run"; cat "$dir/err"; fail=1; }
done
# The log now exists: a second run must refuse to truncate it.
"$bin" train --log "$log" --epochs-max 1 >/dev/null 2>"$dir/err2"; rc=$?
[[ $rc == 2 ]] && grep -q "exists and is not empty" "$dir/err2" || { echo "existing log: exit $rc"; cat "$dir/err2"; fail=1; }
[[ $(($(wc -l <"$log") - 1)) == "$epochs" ]] || { echo "existing log was modified"; fail=1; }
[[ $fail == 0 ]] && echo "train interrupt: ok ($repeats runs; the last kept $epochs finished epochs)"
exit $fail
