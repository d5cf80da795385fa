#!/usr/bin/env bash
# Byte-identity check for refactors: runs a broad set of predict / compare / validate / sweep
# commands (every engine that runs without a GPU, every framework profile, every shipped study,
# the published reference CSV, two shipped sweeps), all as JSON, and stores each stdout (and
# the exit code) in OUTDIR. Capture once with the binary before a refactor, once after, and
# compare the folders byte for byte:
#   tests/golden_identity/capture.sh OLD_BIN CONFIG_DIR /tmp/before
#   tests/golden_identity/capture.sh build/cli/xpusim configs /tmp/after
#   tests/golden_identity/capture.sh --compare /tmp/before /tmp/after
# The outputs stay out of git (megabytes); the command list is the contract.
set -euo pipefail
if [[ "${1:-}" == "--compare" ]]; then
  before="$2"; after="$3"; n=0; bad=0
  for f in "$before"/*.out; do
    n=$((n + 1))
    cmp -s "$f" "$after/$(basename "$f")" || { echo "DIFFERS: $(basename "$f")"; bad=$((bad + 1)); }
    cmp -s "${f%.out}.rc" "$after/$(basename "${f%.out}").rc" || { echo "EXIT DIFFERS: $(basename "$f")"; bad=$((bad + 1)); }
    if [[ -f "${f%.out}.err" ]]; then
      cmp -s "${f%.out}.err" "$after/$(basename "${f%.out}").err" || { echo "STDERR DIFFERS: $(basename "$f")"; bad=$((bad + 1)); }
    fi
  done
  echo "$n commands, $bad differ"
  [[ $bad -eq 0 ]]
  exit
fi
bin="$(realpath "$1")"; export XPUSIM_CONFIG_DIR="$(realpath "$2")"; out="$3"
src="$(cd "$(dirname "$0")/../.." && pwd)"
mkdir -p "$out"
n=0
run() {  # run NAME ARGS...: stdout to NAME.out, exit code to NAME.rc (errors are outputs too)
  local name="$1"; shift
  local rc=0
  (cd "$out" && "$bin" "$@" >"$name.out" 2>"$name.err") || rc=$?
  echo "$rc" >"$out/$name.rc"
  n=$((n + 1))
}
P() { local name="$1"; shift; run "predict_$name" predict --format json "$@"; }

# Analytical GPUs: one device each, then data-parallel placements on several systems.
for d in a10 a100_sxm4_80gb gtx_1080ti h100_sxm5 h200 k80 p100_sxm2 rtx_2080ti rtx_3090 titan_rtx v100_sxm2_16gb; do
  P "gpu_${d}_resnet50" --device "$d" --model resnet50 --batch 64
done
P dp_p100_x8 --device p100_sxm2 --count 8 --model resnet50 --batch 64
P dp_v100_x8_dgx1v --device v100_sxm2_16gb --count 8 --system dgx1v_nvlink --model resnet50 --batch 128 --precision mixed_fp16
P dp_v100_x4_p3 --device v100_sxm2_16gb --count 4 --system aws_p3_8xlarge --model resnet50 --batch 64 --precision mixed_fp16 --data real
P dp_k80_x8_p2 --device k80 --count 8 --system aws_p2_single_host --model resnet50 --batch 32 --data real
P dp_k80_x16_cluster --device k80 --count 16 --system aws_p2_8xlarge_cluster_distributed_replicated --model resnet50 --batch 32
P dp_a100_x8 --device a100_sxm4_80gb --count 8 --system dgx_a100 --model bert_large --batch 16 --precision mixed_bf16
P dp_h100_x8 --device h100_sxm5 --count 8 --system dgx_h100 --model gpt2 --batch 8 --precision mixed_bf16
P dp_v100_x16_dgx2 --device v100_sxm3_32gb --count 16 --system dgx2 --model resnet50 --batch 64 --precision mixed_fp16
P dp_2080ti_x2_desktop --device rtx_2080ti --count 2 --system desktop --model cnn10 --batch 128 --data real
P dp_3090_x2_nvlink --device rtx_3090 --count 2 --system server_pcie_nvlink --model vgg16 --batch 32
P dp_a6000_x4_bridged --device rtx_a6000 --count 4 --system server_pcie_nvlink --model resnet50 --batch 64 --precision mixed_fp16 --data real
P dp_a10_x4_pcie --device a10 --count 4 --system server_pcie --model resnet50 --batch 64 --precision mixed_fp16
P gpu_inference --device a100_sxm4_40gb --model resnet50 --batch 64 --task inference --precision mixed_fp16
P gpu_inference_x4 --device v100_sxm2_16gb --count 4 --model bert_base --batch 32 --task inference --precision mixed_fp16
P gpu_adam --device rtx_3090 --model gnmt --batch 64 --optimizer adam
P gpu_lstm --device titan_v --model imdb_bilstm --batch 64 --data real
P gpu_set --device v100_sxm2_16gb --model resnet50 --batch 64 --set memory_bandwidth_gbps=1800
# Every analytical device (GPUs and CPUs) on its default system: three models, both tasks.
for f in "$src"/configs/devices/*.yaml; do
  d=$(basename "$f" .yaml)
  grep -q '^engine: *tpu_systemc' "$f" && continue
  P "all_${d}_resnet50_real" --device "$d" --model resnet50 --batch 32 --data real
  P "all_${d}_bert_base" --device "$d" --model bert_base --batch 8 --precision mixed_fp16
  P "all_${d}_lstm_inference" --device "$d" --model lstm_textgen --batch 64 --task inference
  P "all_${d}_x2_cnn10" --device "$d" --count 2 --model cnn10 --batch 128 --data real
done
# Every framework profile on every model of a small set, GPU (x1, x4) and TPU (x8), real data.
for f in "$src"/configs/frameworks/*.yaml; do
  fw=$(basename "$f" .yaml)
  for m in resnet50 cnn10 wrn28_10; do
    P "fwall_${fw}_${m}_v100x1" --device v100_sxm2_16gb --model "$m" --batch 64 --precision mixed_fp16 --framework "$fw" --data real
    P "fwall_${fw}_${m}_v100x4" --device v100_sxm2_16gb --count 4 --model "$m" --batch 64 --precision mixed_fp16 --framework "$fw" --data real
    P "fwall_${fw}_${m}_tpu" --device tpu_v2 --count 8 --model "$m" --batch 64 --precision bf16 --framework "$fw" --data real
    P "fwall_${fw}_${m}_gce" --device gce_skylake_vcpu --count 16 --model "$m" --batch 32 --framework "$fw" --data real
  done
done
# Frameworks on the analytical engine.
P fw_amp_dali --device v100_sxm2_16gb --count 8 --system dgx1v_nvlink --model resnet50 --batch 256 --precision mixed_fp16 --framework pytorch_amp_dali --data real
P fw_amp_dali_x1 --device a100_sxm4_40gb --model resnet50 --batch 256 --precision mixed_fp16 --framework pytorch --data real
P fw_keras_gpu --device rtx_2080ti --count 2 --system desktop --model cnn10 --batch 256 --framework keras-tf1.13 --data real
P fw_keras_gpu_x1 --device rtx_2080ti --system desktop --model wrn28_10 --batch 128 --framework keras_tf1_13_gpu --data real
P fw_keras_gpu_syn --device rtx_2080ti --count 2 --system desktop --model wrn28_10 --batch 128 --framework keras_tf1_13_gpu
P fw_keras_gpu_inf --device rtx_2080ti --count 2 --system desktop --model cnn10 --batch 128 --framework keras_tf1_13_gpu --task inference
P fw_mxnet --device v100_sxm2_16gb --count 4 --model resnet50 --batch 128 --precision mixed_fp16 --framework mxnet_1
P fw_tf_bench --device v100_sxm2_16gb --count 4 --model resnet50 --batch 128 --precision mixed_fp16 --framework tensorflow
P fw_keras12_k80 --device k80 --model mnist_cnn --batch 128 --framework keras-tf1.2 --data real
P fw_set --device v100_sxm2_16gb --count 4 --model resnet50 --batch 64 --framework keras_tf1_13_gpu --set framework.step_overhead_ms=3 --data real
# CPU analytical devices.
P cpu_host --device host --model mnist_mlp --batch 128
P cpu_gce_8 --device gce_skylake_vcpu --count 8 --model mnist_cnn --batch 128 --data real
P cpu_gce_32_pip --device gce_skylake_vcpu --count 32 --build pip --model cifar10_cnn --batch 128 --framework keras-tf1.2-pip --data real
P cpu_gce_16_compiled --device gce_skylake_vcpu --count 16 --model imdb_fasttext --batch 32 --framework keras-tf1.2-compiled
P cpu_gce_64 --device gce_skylake_vcpu --count 64 --model lstm_textgen --batch 128 --framework xpusim_cpu --data real
# TPUs (tpu_systemc).
P tpu_v2_resnet50 --device tpu_v2 --count 8 --model resnet50 --batch 128 --precision bf16
P tpu_v3_resnet50_real --device tpu_v3 --count 8 --model resnet50 --batch 128 --precision bf16 --data real
P tpu_v2_x1 --device tpu_v2 --model cnn10 --batch 64 --precision bf16
P tpu_v2_estimator --device tpu_v2 --count 8 --model resnet50 --batch 64 --precision bf16 --framework tpu_estimator --data real
P tpu_keras_colab --device tpu_v2 --count 8 --system colab_tpu_v2-8 --model cnn10 --batch 64 --precision bf16 --framework keras-tf1.13 --data real
P tpu_keras_syn --device tpu_v2 --count 8 --system colab_tpu_v2-8 --model wrn28_10 --batch 16 --precision bf16 --framework keras_tf1_13_tpu
P tpu_v3_gpt2 --device tpu_v3 --count 8 --model gpt2 --batch 8 --precision bf16
P tpu_v3_inference --device tpu_v3 --count 8 --model resnet50 --batch 128 --precision bf16 --task inference
P tpu_v2_oom --device tpu_v2 --count 8 --model bert_large --batch 512 --precision bf16
P tpu_set --device tpu_v2 --count 8 --model resnet50 --batch 64 --precision bf16 --set hbm_bandwidth_gbps=900
# Errors (their message and exit code are outputs too).
P err_tpu_count --device tpu_v2 --count 64 --model resnet50 --batch 64 --precision bf16
P err_gpu_build --device v100_sxm2_16gb --model resnet50 --batch 64 --build pip
P err_fw_engine --device tpu_v2 --count 8 --model resnet50 --batch 64 --precision bf16 --framework pytorch_amp_dali
# compare: every shipped study.
for s in "$src"/configs/studies/*.yaml; do
  run "compare_$(basename "$s" .yaml)" compare "$s" --format json
done
# validate on the published reference CSV.
run validate_published validate --reference "$src/tests/data/reference/published_calibration.csv" --format json
# sweeps: rows as JSON lines and the JSON summary.
for s in riseml_batch gpu_vs_tpu_cost tpu_v2_mxu_hbm tpu_v2_mxu_hbm_gnmt; do
  run "sweep_${s}" sweep "$s" -o "sweep_${s}.jsonl" --summary json
  sed -i -E 's/ run in [0-9.]+ s \([^)]*\)/ run in (time left out)/' "$out/sweep_${s}.err"  # wall time: not an output
  cp "$out/sweep_${s}.jsonl" "$out/sweep_${s}_rows.out"; echo 0 >"$out/sweep_${s}_rows.rc"
  n=$((n + 1))
done
echo "$n commands captured in $out"
