#!/usr/bin/env bash
# `xpusim predict --device host`: the report names the detected CPU (`host_cpu`) in JSON, and the
# table keeps its width, the long text going below it as "host_cpu: ...".
# Usage: predict_host.sh XPUSIM
set -uo pipefail
bin="$1"
fail=0
json="$("$bin" predict --model mnist_mlp --device host --batch 32 --format json)" || { echo "FAIL: predict json"; exit 1; }
cpu="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["host_cpu"])' "$json")" ||
  { echo "FAIL: no host_cpu in the JSON"; fail=1; }
grep -Eq "logical CPUs?, .* on (128|256|512)-bit units$" <<<"$cpu" || { echo "FAIL: host_cpu reads '$cpu'"; fail=1; }
table="$("$bin" predict --model mnist_mlp --device host --batch 32)" || { echo "FAIL: predict table"; exit 1; }
[ "$(tail -1 <<<"$table")" = "host_cpu: $cpu" ] || { echo "FAIL: the table does not end with 'host_cpu: $cpu'"; fail=1; }
wide="$(head -n -1 <<<"$table" | awk 'length > 80' | head -3)"
[ -z "$wide" ] || { echo "FAIL: table lines wider than 80 columns:"; echo "$wide"; fail=1; }
# A GPU has no detected CPU.
"$bin" predict --model mnist_mlp --device v100_sxm2_16gb --batch 32 --format json | grep -q host_cpu &&
  { echo "FAIL: host_cpu on a GPU report"; fail=1; }
[ "$fail" -eq 0 ] && echo "predict --device host: all checks passed"
exit "$fail"
