#!/usr/bin/env bash
# Round two of bad input (issue 34), the cases a golden case cannot hold: special files as
# inputs (FIFO, a link to /dev/zero, a directory named checkpoint.xpck), outputs that are an
# input or another output, a waveform to a full disk, locked row files, --jobs past the
# machine, tampered resume files (CR LF, reordered, edited rows), and the advice of a train
# run stopped before its first epoch. Every case: exit 2 with the message, never a hang, a
# crash or a destroyed input.
#   input_output_guards.sh XPUSIM_BIN
set -u
bin="$1"
dir=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$dir"' EXIT
fails=0
expect() {  # expect EXIT WHAT-IN-STDERR -- ARGS...
  local want_rc="$1" want="$2"; shift 3
  local err rc
  err=$(timeout 20 "$@" 2>&1 >/dev/null); rc=$?
  if [[ $rc != "$want_rc" || "$err" != *"$want"* ]]; then
    echo "FAIL: $* -> exit $rc, stderr: $err (wanted exit $want_rc and '$want')"; fails=$((fails + 1))
  else
    echo "ok: $want"
  fi
}
sweep_yaml="$dir/s.yaml"
cat > "$sweep_yaml" <<'Y'
name: guards
fixed: {device: v100_sxm2_16gb, model: mnist_mlp, precision: fp32}
axes:
  batch: [16, 32, 64, 128]
Y

# Special files as inputs: refused at once, not read for ever or blocked on.
mkfifo "$dir/fifo.yaml"
expect 2 "fifo.yaml: not a regular file" -- "$bin" sweep "$dir/fifo.yaml" -o "$dir/f.csv"
ln -s /dev/zero "$dir/zero.onnx"
expect 2 "zero.onnx: not a regular file" -- "$bin" predict --device v100_sxm2_16gb --model "$dir/zero.onnx"
expect 2 "/dev/zero: not a regular file" -- "$bin" validate --reference /dev/zero
head -c $((5 * 1024 * 1024)) /dev/zero | tr '\0' 'a' > "$dir/big.yaml"
expect 2 "limit for a YAML spec (set XPUSIM_MAX_INPUT_MB" -- "$bin" sweep "$dir/big.yaml" -o "$dir/b.csv"
expect 2 "limit for this kind of input" -- env XPUSIM_MAX_INPUT_MB=1 "$bin" sweep "$dir/big.yaml" -o "$dir/b.csv"

# Outputs over inputs, and two outputs on one file: refused, the input intact.
cp "$sweep_yaml" "$dir/keep.yaml"
expect 2 "is the same file as the input" -- "$bin" sweep "$sweep_yaml" -o "$sweep_yaml" --format csv
ln -s "$sweep_yaml" "$dir/link.csv"
expect 2 "is the same file as the input" -- "$bin" sweep "$sweep_yaml" -o "$dir/link.csv"
cmp -s "$sweep_yaml" "$dir/keep.yaml" || { echo "FAIL: the sweep file was changed"; fails=$((fails + 1)); }
cp "$(dirname "$0")/../../configs/studies/cloud_cpu_vs_k80.yaml" "$dir/st.yaml"
cp "$dir/st.yaml" "$dir/st.keep"
expect 2 "is the same file as the input" -- "$bin" compare "$dir/st.yaml" --format csv --out "$dir/st.yaml"
cmp -s "$dir/st.yaml" "$dir/st.keep" || { echo "FAIL: the study file was changed"; fails=$((fails + 1)); }
expect 2 "is also the --trace output" -- "$bin" predict --device tpu_v2 --count 8 --model mnist_mlp \
  --trace "$dir/x.vcd" --vcd "$dir/x.vcd"
expect 2 "is also the --output output" -- "$bin" sweep "$sweep_yaml" -o "$dir/r.svg" --format csv --chart "$dir/r.svg"
# A waveform to a full disk fails naming --vcd (SystemC alone reported nothing).
ln -s /dev/full "$dir/full.vcd"
expect 2 "--vcd: $dir/full.vcd: write failed" -- "$bin" predict --device tpu_v2 --count 1 --model mnist_mlp --vcd "$dir/full.vcd"

# --jobs is bounded by the machine; more jobs than points fork no more than the points.
expect 2 "--jobs: must be in [1, " -- "$bin" sweep "$sweep_yaml" -o "$dir/j.csv" --jobs 100000
"$bin" sweep "$sweep_yaml" -o "$dir/j.csv" --jobs 8 >/dev/null 2>"$dir/err" || { echo "FAIL: --jobs 8"; cat "$dir/err"; fails=$((fails + 1)); }
grep -q "4 processes" "$dir/err" && echo "ok: 4 points, 4 processes" || { echo "FAIL: workers not capped at the points:"; cat "$dir/err"; fails=$((fails + 1)); }

# A row file held by another process (the advisory lock) is refused, not interleaved.
"$bin" sweep "$sweep_yaml" -o "$dir/full.csv" >/dev/null 2>&1
flock "$dir/full.csv" sleep 30 &
sleep 0.3
expect 2 "in use by another xpusim process" -- "$bin" sweep "$sweep_yaml" -o "$dir/full.csv" --resume
kill %1 2>/dev/null; wait 2>/dev/null

# Tampered row files on --resume: CR LF, rows out of order, an edited number.
head -n 3 "$dir/full.csv" | sed 's/$/\r/' > "$dir/crlf.csv"
expect 2 "ends in CR LF" -- "$bin" sweep "$sweep_yaml" -o "$dir/crlf.csv" --resume
{ head -n 1 "$dir/full.csv"; sed -n 3p "$dir/full.csv"; sed -n 2p "$dir/full.csv"; } > "$dir/order.csv"
expect 2 "xpusim writes rows in point order" -- "$bin" sweep "$sweep_yaml" -o "$dir/order.csv" --resume
head -n 3 "$dir/full.csv" | awk -F, 'BEGIN{OFS=","} NR==3{$8=$8*2} {print}' > "$dir/edited.csv"
expect 2 "is not what this sweep computes for it" -- "$bin" sweep "$sweep_yaml" -o "$dir/edited.csv" --resume
head -n 2 "$dir/full.csv" | awk -F, 'BEGIN{OFS=","} NR==2{$8="nan"} {print}' > "$dir/nan.csv"
expect 2 "is not a finite value >= 0" -- "$bin" sweep "$sweep_yaml" -o "$dir/nan.csv" --resume
head -n 3 "$dir/full.csv" > "$dir/part.csv"
"$bin" sweep "$sweep_yaml" -o "$dir/part.csv" --resume >/dev/null 2>&1 && cmp -s "$dir/part.csv" "$dir/full.csv" \
  && echo "ok: an untouched partial file resumes byte-identical" || { echo "FAIL: honest resume"; fails=$((fails + 1)); }

# Compare row files carry a CRC-32C of their rows: an edited or reordered row is refused.
"$bin" compare "$dir/st.yaml" --format csv --out "$dir/cmp.csv" >/dev/null 2>&1
awk -F, 'BEGIN{OFS=","} NR==3{$6=$6+1} {print}' "$dir/cmp.csv" > "$dir/cmp_edited.csv"
expect 2 "do not match their checksum" -- "$bin" compare "$dir/st.yaml" --format csv --out "$dir/cmp_edited.csv" --resume
{ head -n 2 "$dir/cmp.csv"; sed -n 4p "$dir/cmp.csv"; sed -n 3p "$dir/cmp.csv"; sed -n '5,$p' "$dir/cmp.csv"; } > "$dir/cmp_order.csv"
expect 2 "do not match their checksum" -- "$bin" compare "$dir/st.yaml" --format csv --out "$dir/cmp_order.csv" --resume
"$bin" compare "$dir/st.yaml" --format csv --out "$dir/cmp.csv" --resume >/dev/null 2>&1 \
  && echo "ok: an untouched compare row file resumes" || { echo "FAIL: honest compare resume"; fails=$((fails + 1)); }

# Checkpoints: a directory where the file should be.
mkdir -p "$dir/ck/checkpoint.xpck"
expect 2 "checkpoint.xpck: is a directory, expected a file" -- "$bin" train --checkpoint "$dir/ck" --resume \
  --train-limit 64 --test-limit 64 --epochs-max 1 --batch 32 --threads 1
# Interrupted before its first epoch: no resume advice (there is no checkpoint to resume).
if [[ -d /usr/share/datasets/fashion-mnist ]]; then
  "$bin" train --model mnist_mlp --train-limit 60000 --test-limit 64 --batch 8 --lr 0.0001 --epochs-max 1 --threads 1 \
    --checkpoint "$dir/ck2" --log "$dir/ck2.tsv" >/dev/null 2>"$dir/err" &
  pid=$!
  for _ in $(seq 1 200); do [[ -s "$dir/ck2.tsv" ]] && break; sleep 0.05; done
  sleep 0.5
  kill -INT "$pid" 2>/dev/null; wait "$pid"; rc=$?
  if [[ $rc == 130 ]] && grep -q "no checkpoint was written: start again with --overwrite" "$dir/err" \
     && ! grep -q "continue with --resume" "$dir/err"; then
    echo "ok: no resume advice before the first epoch"
  else
    echo "FAIL: interrupted before the first epoch -> exit $rc:"; cat "$dir/err"; fails=$((fails + 1))
  fi
fi
[[ $fails == 0 ]] && echo "all guards hold" || echo "$fails failures"
exit $((fails > 0))
