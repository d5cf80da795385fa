#!/usr/bin/env bash
# A study on today's hardware runs from the shipped 2025-2026 catalogs with on-demand and spot
# prices (tests/data/studies/today_gpus.yaml), and the same options run from a SkyPilot vms.csv
# fixture given with --catalog. Checks that the prices are the catalogs' (not recomputed
# constants), that spot costs less than on demand for the same throughput, and that every
# row got a cost.
# Usage: today_study.sh XPUSIM SOURCE_DIR
set -euo pipefail
bin="$1" src="$2"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$bin" compare "$src/tests/data/studies/today_gpus.yaml" --format json >"$tmp/today.json" 2>"$tmp/today.err" ||
  fail "compare today_gpus: $(cat "$tmp/today.err")"
row() { jq -e ".rows[] | select(.option == \"$1\") | $2" "$3" >/dev/null; }
row p5_on_demand '.price_usd_per_h == 55.04' "$tmp/today.json" || fail "p5 on-demand price"
row p5_spot '.price_usd_per_h == 17.6289' "$tmp/today.json" || fail "p5 spot price"
row p4d_spot '.price_usd_per_h == 2.4655' "$tmp/today.json" || fail "p4d spot price"
row lambda_8x_h100 '.price_usd_per_h == 31.92' "$tmp/today.json" || fail "Lambda price"
row nebius_8x_h100_spot '.price_usd_per_h == 10' "$tmp/today.json" || fail "Nebius spot price"
row azure_nd_h100_v5 '.price_usd_per_h == 98.32' "$tmp/today.json" || fail "Azure ND H100 v5 on-demand price"
row azure_nd_a100_v4_spot '.price_usd_per_h == 2.99167' "$tmp/today.json" || fail "Azure ND A100 v4 spot price"
jq -e '[.rows[] | select(.cost_to_target_usd == null or .cost_to_target_usd <= 0 or .error != null)] | length == 0' \
  "$tmp/today.json" >/dev/null || fail "a row without a cost: $(jq -c '.rows[] | {option, cost_to_target_usd, error}' "$tmp/today.json")"
# Same placement and throughput: spot / on-demand cost = spot / on-demand price.
od=$(jq '.rows[] | select(.option == "p5_on_demand") | .cost_to_target_usd' "$tmp/today.json")
sp=$(jq '.rows[] | select(.option == "p5_spot") | .cost_to_target_usd' "$tmp/today.json")
awk -v od="$od" -v sp="$sp" 'BEGIN { r = sp / od; exit !(r > 0.3 && r < 0.34) }' ||
  fail "spot/on-demand cost ratio $sp / $od, expected 17.6289 / 55.04 = 0.320"

# From the SkyPilot fixture: the same prices reached through --catalog.
"$bin" --catalog "$src/tests/data/skypilot/aws/vms.csv" compare "$src/tests/data/studies/today_gpus_skypilot.yaml" \
  --format json >"$tmp/sky.json" 2>"$tmp/sky.err" || fail "compare with --catalog: $(cat "$tmp/sky.err")"
row p5_on_demand '.price_usd_per_h == 55.04 and .offer == "skypilot/p5.48xlarge"' "$tmp/sky.json" || fail "sky p5 on-demand"
row p5_spot '.price_usd_per_h == 17.6289' "$tmp/sky.json" || fail "sky p5 spot"
# p4d: us-west-2 lists 21.95764, us-east-1 21.957642: the cheapest region wins, with its spot.
row p4d_on_demand '.price_usd_per_h == 21.95764' "$tmp/sky.json" || fail "sky p4d on-demand"
row p4d_spot '.price_usd_per_h == 7.9992' "$tmp/sky.json" || fail "sky p4d spot"
# Throughput does not depend on where the price came from.
a=$(jq '.rows[] | select(.option == "p5_on_demand") | .throughput_samples_per_s' "$tmp/today.json")
b=$(jq '.rows[] | select(.option == "p5_on_demand") | .throughput_samples_per_s' "$tmp/sky.json")
[[ "$a" == "$b" ]] || fail "throughput differs between catalogs: $a vs $b"
# The study naming a SkyPilot offer without --catalog: the loader's error, exit 2.
set +e
"$bin" compare "$src/tests/data/studies/today_gpus_skypilot.yaml" >/dev/null 2>"$tmp/err"; rc=$?
set -e
[[ $rc == 2 ]] && grep -q "unknown price offer 'skypilot/p5.48xlarge'" "$tmp/err" || fail "no --catalog: rc $rc $(cat "$tmp/err")"

# GCP's A2 offer (machine type 0.73948 + A100 2.93391; spot 0.36975 + 1.4341) and a commitment
# named committed_1y (= reserved_1y: p3.8xlarge's $8.34/h against $12.24/h on demand).
"$bin" compare "$src/tests/data/studies/gcp_and_commitments.yaml" --format json >"$tmp/gcp.json" 2>"$tmp/gcp.err" ||
  fail "compare gcp_and_commitments: $(cat "$tmp/gcp.err")"
row a2_on_demand '.price_usd_per_h == 3.67339' "$tmp/gcp.json" || fail "a2-highgpu-1g on-demand price"
row a2_spot '.price_usd_per_h == 1.80385' "$tmp/gcp.json" || fail "a2-highgpu-1g spot price"
row p3_committed_1y '.price_usd_per_h == 8.34 and .pricing == "reserved_1y"' "$tmp/gcp.json" ||
  fail "committed_1y: $(jq -c '.rows[] | select(.option == "p3_committed_1y") | {price_usd_per_h, pricing}' "$tmp/gcp.json")"
od3=$(jq '.rows[] | select(.option == "p3_on_demand") | .cost_to_target_usd' "$tmp/gcp.json")
c1=$(jq '.rows[] | select(.option == "p3_committed_1y") | .cost_to_target_usd' "$tmp/gcp.json")
h1=$(jq '.rows[] | select(.option == "p3_committed_1y") | .hours_to_target' "$tmp/gcp.json")
awk -v od="$od3" -v c="$c1" 'BEGIN { r = c / od; exit !(r > 0.6813 && r < 0.6815) }' ||
  fail "committed/on-demand cost ratio $c1 / $od3, expected 8.34 / 12.24 = 0.6814"
# By hand: aws_2018 bills per second (60 s minimum): ceil(hours x 3600) s x 8.34 $/h.
awk -v h="$h1" -v c="$c1" 'BEGIN { s = h * 3600; b = (s == int(s)) ? s : int(s) + 1; if (b < 60) b = 60;
  e = b / 3600 * 8.34; exit !(c > e - 1e-9 && c < e + 1e-9) }' || fail "committed_1y cost $c1 for $h1 h at 8.34 \$/h"

# plan prices a TPU v5e slice from the same catalog: v5litepod-4 spot 0.9797 $/h = 0.244925 per
# chip-hour; v5e-256 holds 256 chips: 62.7008 $/h. No 1-year price is published for it.
m=(--model llama3_70b --global-batch 256 --seq-len 8192 --cluster v5e-256 --top 1)
"$bin" plan "${m[@]}" --offer gcp_2026/tpu-v5litepod-4 --tier spot --format json >"$tmp/plan.json" ||
  fail "plan with the v5e offer"
jq -e '.offer.usd_per_gpu_h == 0.244925 and .offer.tier == "preemptible"' "$tmp/plan.json" >/dev/null ||
  fail "v5e price per chip-hour: $(jq -c .offer "$tmp/plan.json")"
jq -e '.ranked[0].usd_per_h == 62.7008' "$tmp/plan.json" >/dev/null || fail "v5e-256 price per hour"
set +e
"$bin" plan "${m[@]}" --offer gcp_2026/tpu-v5litepod-4 --tier committed_1y >/dev/null 2>"$tmp/err"; rc=$?
set -e
[[ $rc == 2 ]] && grep -q "has no reserved_1y price" "$tmp/err" || fail "committed_1y on v5e: rc $rc $(cat "$tmp/err")"
echo "today_study: ok (p5 on-demand \$$od, spot \$$sp per epoch)"
