#!/usr/bin/env bash
# `xpusim train --checkpoint DIR` stopped by a real SIGTERM after its first checkpoint (SIGINT
# is train_interrupt.sh's; both take the same path), then
# `--resume`d, gives bit-identical losses and accuracies to an uninterrupted run with the same
# seed (issue 16); the log of the resumed run holds every epoch; a resume with another batch or
# seed, thread count or learning rate is refused naming the flag. Exits 77 (skipped) without the Fashion-MNIST package.
#   train_resume.sh XPUSIM_BIN
set -u
bin="$1"
[[ -d /usr/share/datasets/fashion-mnist ]] || { echo "no Fashion-MNIST: skipped"; exit 77; }
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
ck="$dir/ck"
opts=(--model mnist_mlp --train-limit 4096 --test-limit 512 --target-accuracy 1 --threads 1)
common=(train "${opts[@]}" --batch 32 --seed 7)
fail=0
# Many epochs, so that it is still running when the signal comes.
"$bin" "${common[@]}" --epochs-max 200 --checkpoint "$ck" --log "$dir/first.tsv" --format json >"$dir/stopped.json" 2>"$dir/err" &
pid=$!
for _ in $(seq 1 600); do [[ -f "$ck/checkpoint.xpck" ]] && break; sleep 0.05; done
kill -TERM "$pid"
wait "$pid"; rc=$?
[[ $rc == 130 ]] || { echo "interrupted run: exit $rc, expected 130"; cat "$dir/err"; exit 1; }
grep -q "continue with --resume" "$dir/err" || { echo "no resume hint:"; cat "$dir/err"; fail=1; }
done_epochs=$(sed -n 's/^epoch \([0-9]*\)$/\1/p' "$ck/checkpoint.xpck" | head -1)
[[ -n "$done_epochs" && $done_epochs -ge 1 ]] || { echo "checkpoint has no finished epoch"; exit 1; }
total=$((done_epochs + 2))
# Refused: a fresh run over the checkpoint, another batch, another seed (the checkpoint is
# left as it was).
"$bin" "${common[@]}" --epochs-max 1 --checkpoint "$ck" >/dev/null 2>"$dir/err"; rc=$?
[[ $rc == 2 ]] && grep -q -- "--checkpoint: $ck holds a checkpoint of an earlier run" "$dir/err" || { echo "fresh run over a checkpoint: exit $rc"; cat "$dir/err"; fail=1; }
"$bin" train "${opts[@]}" --batch 64 --seed 7 --epochs-max "$total" --checkpoint "$ck" --resume >/dev/null 2>"$dir/err"; rc=$?
[[ $rc == 2 ]] && grep -q -- "--batch: .* was written with batch 32, not 64" "$dir/err" || { echo "batch mismatch: exit $rc"; cat "$dir/err"; fail=1; }
"$bin" train "${opts[@]}" --batch 32 --seed 8 --epochs-max "$total" --checkpoint "$ck" --resume >/dev/null 2>"$dir/err"; rc=$?
[[ $rc == 2 ]] && grep -q -- "--seed: .* was written with seed 7, not 8" "$dir/err" || { echo "seed mismatch: exit $rc"; cat "$dir/err"; fail=1; }
# Another thread count (oneDNN may sum in another order) or learning rate: refused too.
"$bin" train "${opts[@]:0:8}" --threads 2 --batch 32 --seed 7 --epochs-max "$total" --checkpoint "$ck" --resume >/dev/null 2>"$dir/err"; rc=$?
[[ $rc == 2 ]] && grep -q -- "--threads: .* was written with threads 1, not 2" "$dir/err" || { echo "threads mismatch: exit $rc"; cat "$dir/err"; fail=1; }
"$bin" "${common[@]}" --lr 0.02 --epochs-max "$total" --checkpoint "$ck" --resume >/dev/null 2>"$dir/err"; rc=$?
[[ $rc == 2 ]] && grep -q -- "--lr: .* was written with learning rate 0.0099999997764825821, not 0.019999999552965164" "$dir/err" || { echo "lr mismatch: exit $rc"; cat "$dir/err"; fail=1; }
# Resumed to `total` epochs, and the same number of epochs without interruption.
"$bin" "${common[@]}" --epochs-max "$total" --checkpoint "$ck" --resume --log "$dir/resumed.tsv" --format json \
  >"$dir/resumed.json" 2>"$dir/err" || { echo "resumed run failed"; cat "$dir/err"; exit 1; }
"$bin" "${common[@]}" --epochs-max "$total" --format json >"$dir/full.json" 2>"$dir/err" ||
  { echo "uninterrupted run failed"; cat "$dir/err"; exit 1; }
python3 - "$dir/full.json" "$dir/resumed.json" "$done_epochs" "$total" <<'PY' || fail=1
import json, sys
full, resumed = (json.load(open(p)) for p in sys.argv[1:3])
done, total = int(sys.argv[3]), int(sys.argv[4])
strip = lambda r: [(e["epoch"], e["train_loss"], e["test_accuracy"]) for e in r["epochs"]]
ok = True
if resumed["resumed_after_epoch"] != done: print("resumed_after_epoch", resumed["resumed_after_epoch"], "not", done); ok = False
if len(full["epochs"]) != total: print("uninterrupted run has", len(full["epochs"]), "epochs, not", total); ok = False
if strip(full) != strip(resumed):
    print("resumed run differs from the uninterrupted one:"); print(strip(full)); print(strip(resumed)); ok = False
else:
    print("bit-identical over", total, "epochs (resumed after", done, "):", [e[2] for e in strip(full)])
sys.exit(0 if ok else 1)
PY
[[ $(($(wc -l <"$dir/resumed.tsv") - 1)) == "$total" ]] || { echo "resumed log lacks epochs:"; cat "$dir/resumed.tsv"; fail=1; }
[[ $fail == 0 ]] && echo "train resume: ok"
exit $fail
