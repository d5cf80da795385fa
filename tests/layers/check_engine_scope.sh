#!/usr/bin/env bash
# Engines return the device step; the host pass (predict/host_pass.cpp) owns the host and
# framework side of it, once for every engine. Fails when an engine file (devices/*, sim/tpu)
# computes or reads what belongs to the pass: the global batch, a throughput, the input
# pipeline's cost (dataset per-sample cost, the framework's input threads, cost scale, input
# mode, device decode), a host or framework step overhead, the framework's compile time, or
# the modelled power. Comments are ignored. Prints FILE:LINE: WHAT for each hit and exits 1.
# Usage: check_engine_scope.sh [REPO_ROOT]   (tests/layers/engine_scope_self_test.sh shows it can fail)
set -euo pipefail
root="${1:-$(dirname "$0")/../..}"
cd "$root"

# Pattern -> what it is (the message names the owner).
rules=(
  'global_batch|global batch'
  'throughput_(samples|tokens)_per_s|throughput'
  'host_preprocess_ms|input pipeline bound (dataset cost per sample)'
  'input_cost_scale|input_threads|device_decode_us_per_sample|device_decode_reference_ms|InputMode::|input pipeline bound (framework input fields)'
  'fw\.step_overhead_ms|framework->step_overhead_ms|device_step_overhead_ms|host\.step_overhead_ms|framework_step_overhead|step overhead (host or framework)'
  'compile_base_s|compile_per_op_ms|compile time'
  'placement_power_w|energy_per_step_j|modelled power'
)

bad=0
checked=0
while IFS= read -r file; do
  checked=$((checked + 1))
  for rule in "${rules[@]}"; do
    pattern="${rule%|*}"; what="${rule##*|}"
    while IFS=: read -r line _; do
      echo "$file:$line: an engine computes the $what: that is the host pass's (predict/host_pass.cpp)"
      bad=1
    done < <(sed -E 's#//.*$##' "$file" | grep -nE "$pattern" || true)
  done
done < <(git ls-files -- 'devices/*' 'sim/tpu/*' 2>/dev/null | grep -E '\.(cpp|hpp|cu|cuh)$' || true)

if (( checked == 0 )); then echo "check_engine_scope: no engine source files under $root" >&2; exit 1; fi
if (( bad )); then exit 1; fi
echo "check_engine_scope: $checked engine files, none computes throughput, global batch, pipeline bound, step overhead, compile time or power"
