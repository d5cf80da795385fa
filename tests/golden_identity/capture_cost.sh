#!/usr/bin/env bash
# Captures the outputs of the cost-side commands (compare on every shipped study, validate on
# the published calibration rows, the shipped sweeps, a set of predict commands and the error
# messages of bad studies) into DIR, so a refactor can be checked byte-for-byte against the
# binary from before it:  capture_cost.sh OLD_XPUSIM before/ && capture_cost.sh NEW_XPUSIM after/
# && diff -r before after.  Run from the repository root (configs/ and tests/data/ are read
# from there). SKIP_BIG=1 leaves out the 10,240-point sweep.
set -u
bin=$(realpath "$1")
out=$2
mkdir -p "$out"
export XPUSIM_CONFIG_DIR=${XPUSIM_CONFIG_DIR:-$PWD/configs}
run() {  # run NAME ARGS...: stdout, stderr and exit status of one command
  local name=$1; shift
  "$bin" "$@" >"$out/$name.out" 2>"$out/$name.err"
  echo $? >"$out/$name.rc"
}
for s in configs/studies/*.yaml; do
  n=$(basename "$s" .yaml)
  for f in json csv; do run "compare_${n}_$f" compare "$s" --format "$f"; done
done
ref=tests/data/reference/published_calibration.csv
for f in json csv; do run "validate_$f" validate --reference "$ref" --format "$f"; done
for s in configs/sweeps/*.yaml; do
  n=$(basename "$s" .yaml)
  if [ "${SKIP_BIG:-0}" = 1 ] && [ "$n" = tpu_analytical_10k ]; then continue; fi
  run "sweep_${n}" sweep "$s" -o "$out/sweep_${n}.csv" --summary json --jobs 2
  # The run time on stderr is not an output.
  sed -i -E 's/in [0-9.]+ s \([0-9.]+ points\/s/in T s (R points\/s/' "$out/sweep_${n}.err"
done
i=0
while IFS= read -r line; do
  [ -z "$line" ] && continue
  i=$((i + 1))
  # shellcheck disable=SC2086
  run "predict_$i" predict $line --format json
done <<'LIST'
--device v100_sxm2_16gb --model resnet50 --batch 64
--device v100_sxm2_16gb --count 8 --system dgx1v_nvlink --model resnet50 --batch 128 --precision mixed_fp16
--device k80 --model resnet50 --batch 32 --data synthetic
--device tpu_v2 --count 8 --model resnet50 --batch 128 --precision bf16
--device tpu_v3 --count 8 --model resnet50 --batch 128 --precision bf16
--device a100_sxm4_40gb --count 8 --model resnet50 --batch 256 --precision mixed_fp16
--device h100_sxm5 --model resnet50 --batch 256 --precision mixed_fp16
--device gce_skylake_vcpu --count 16 --system gce_n1_highcpu --model cifar10_cnn --batch 32 --build compiled
--device v100_sxm2_16gb --model resnet50 --batch 64 --task inference
--device gce_skylake_vcpu --count 8 --model mnist_cnn --batch 128 --build nonsense
--device titan_rtx --model resnet50 --batch 64 --precision mixed_fp16
--device v100_sxm2_16gb --model resnet50 --batch 100000
LIST
# Bad studies: the error text and exit status.
bad=$(mktemp -d)
printf 'name: bad\ntargets:\n  - {label: t, model: resnet50, dataset: imagenet, epochs: 1}\noptions:\n  - {label: o, device: v100_sxm2_16gb, offer: nope}\n' >"$bad/bad_offer.yaml"
printf 'name: bad\ntargets:\n  - {label: t, model: resnet50, dataset: imagenet, epochs: 1}\noptions:\n  - {label: o, device: gce_skylake_vcpu, count: 8, build: nonsense, offer: gcp_2017/n1-highcpu-8, pricing: preemptible, throughput: 10, throughput_source: test}\n' >"$bad/bad_build.yaml"
for s in "$bad"/*.yaml; do run "compare_err_$(basename "$s" .yaml)" compare "$s" --format json; done
sed -i "s#$bad#BAD#g" "$out"/compare_err_*.err 2>/dev/null
rm -rf "$bad"
