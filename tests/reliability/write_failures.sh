#!/usr/bin/env bash
# Every output a command writes goes to /dev/full once: each must fail with exit 2 and an
# error naming the path or stream, never exit 0 with a truncated file (issue 16).
#   write_failures.sh XPUSIM_BIN TESTS_DIR
set -u
bin="$1"; tests="$2"
ref="$tests/data/validation/golden_reference.csv"
fails=0
expect() {  # expect WHAT-IN-STDERR -- ARGS... ; stdout goes to /dev/null unless the case says otherwise
  local want="$1"; shift; shift
  local err rc
  err=$("$@" 2>&1 >/dev/null); rc=$?
  if [[ $rc != 2 || "$err" != *"$want"* ]]; then
    echo "FAIL: $* -> exit $rc, stderr: $err (wanted exit 2 and '$want')"; fails=$((fails + 1))
  else
    echo "ok: ${*:2:3} ... -> $want"
  fi
}
expect "--write-topology: /dev/full: write failed" -- "$bin" systolic --model mnist_mlp --write-topology /dev/full
# Outputs whose name must end in a suffix go through a symlink to /dev/full.
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
ln -s /dev/full "$dir/chart.svg"
expect "--chart: $dir/chart.svg: write failed" -- "$bin" compare riseml_resnet50 --chart "$dir/chart.svg"
expect "--out: /dev/full: write failed" -- "$bin" compare cloud_cpu_vs_k80 --format csv --out /dev/full
expect "--measure-out: /dev/full: write failed" -- "$bin" validate --measure cpu --measure-cases mnist_mlp:32 \
  --measure-steps 1 --measure-warmup 0 --measure-repeats 1 --threads 1 --measure-out /dev/full
if [[ -d /usr/share/datasets/fashion-mnist ]]; then
  expect "--log: /dev/full: write failed" -- "$bin" train --train-limit 64 --test-limit 64 --epochs-max 1 --batch 32 \
    --threads 1 --log /dev/full --overwrite
fi
# Traces are streamed (common/chunked_writer.hpp), whose errors say "cannot write file: WHY".
expect "--trace: /dev/full: cannot write file: No space left on device" -- "$bin" predict --device tpu_v2 --count 8 --model mnist_mlp --trace /dev/full
# stdout itself: redirect it to /dev/full (the helper sends it to /dev/null, so inline).
err=$("$bin" models --format json 2>&1 >/dev/full); rc=$?
if [[ $rc != 2 || "$err" != *"stdout: write failed"* ]]; then
  echo "FAIL: models > /dev/full -> exit $rc, stderr: $err"; fails=$((fails + 1))
else
  echo "ok: stdout to /dev/full -> exit 2"
fi
# A file under a regular file cannot be created: exit 2 naming the flag.
tmp="$dir/plain_file"; : > "$tmp"
expect "--write-topology: $tmp/x.csv: cannot write file" -- "$bin" systolic --model mnist_mlp --write-topology "$tmp/x.csv"
expect "--measure-out: cannot create directory '$tmp': Not a directory" -- "$bin" validate --measure cpu \
  --measure-cases mnist_mlp:32 --measure-steps 1 --measure-warmup 0 --measure-repeats 1 --threads 1 --measure-out "$tmp/m.csv"
exit $((fails > 0))
