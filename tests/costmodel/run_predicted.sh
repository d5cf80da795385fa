#!/usr/bin/env bash
# Runs the RiseML-with-predicted-throughputs check, or reports it skipped (exit 77) when the
# device models it needs (tpu_v2 for tpu_systemc, v100_sxm2_16gb for analytical) are not in
# this tree yet.
set -u
tests="$1"; configs="$2"
for d in tpu_v2 v100_sxm2_16gb; do
  if [[ ! -f "$configs/devices/$d.yaml" ]]; then
    echo "skipped: configs/devices/$d.yaml is missing (engine not merged)"; exit 77
  fi
done
exec "$tests" "[riseml_predicted]"
