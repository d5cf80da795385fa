#!/usr/bin/env bash
# `offer: cheapest` in compare, plan and sweep picks the lowest $/h among the shipped offers that
# hold the placement, names it with its date and source, and fails with one clear error when
# none does. The expected picks are read by hand from configs/pricing/*_2026.yaml:
#   8x H100 (dgx_h100, hosts of 8) on demand: nebius 23.60 < lambda 31.92 < aws p5 55.04 < azure 98.32
#     (1-GPU offers would split the host; aws_2025's p5 has a capacity-block price only);
#   spot: nebius 10.00 < aws p5 17.6289; spot within aws: p5 17.6289; region us-east-1: p5 55.04;
#   1x H100, no system: nebius 1-GPU 2.95 < modal 3.9492 < lambda 4.29 < aws p5.4xlarge 6.88.
# Usage: cheapest_offer.sh XPUSIM SOURCE_DIR
set -euo pipefail
bin="$1" src="$2"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
row() { jq -e ".rows[] | select(.option == \"$1\") | $2" "$3" >/dev/null || fail "$1: $2: $(jq -c ".rows[] | select(.option == \"$1\") | {offer, price_usd_per_h, offer_choice}" "$3")"; }

nebius8=nebius_2026/gpu-h100-sxm_8gpu-128vcpu-1600gb
"$bin" compare "$src/tests/data/studies/cheapest_offer.yaml" --format json >"$tmp/c.json" 2>"$tmp/c.err" ||
  fail "compare: $(cat "$tmp/c.err")"
row h100x8_on_demand ".offer == \"$nebius8\" and .price_usd_per_h == 23.6 and .offer_instances == 1" "$tmp/c.json"
row h100x8_on_demand '.offer_date == "2026-11-26" and (.offer_source | test("^https://"))' "$tmp/c.json"
row h100x8_on_demand '.offer_choice | startswith("cheapest of 4 offers holding 8 x h100_sxm5 at on_demand: nebius_2026/")' "$tmp/c.json"
row h100x8_spot ".offer == \"$nebius8\" and .price_usd_per_h == 10 and .pricing == \"preemptible\"" "$tmp/c.json"
row h100x8_spot_aws '.offer == "aws_2026/p5.48xlarge" and .price_usd_per_h == 17.6289' "$tmp/c.json"
row h100x8_spot_aws '.offer_choice | test("provider aws")' "$tmp/c.json"
row h100x8_us_east_1 '.offer == "aws_2026/p5.48xlarge" and .price_usd_per_h == 55.04' "$tmp/c.json"
row h100x1_on_demand '.offer == "nebius_2026/gpu-h100-sxm_1gpu-16vcpu-200gb" and .price_usd_per_h == 2.95' "$tmp/c.json"
# L4: gcp g2-standard-4 0.70683 (0.14679 VM + 0.56004 GPU) < modal 0.7992 < aws g6.4xlarge 1.3232;
# 8 on aws spot (no system: one instance holds all 8): g6.48xlarge 3.7289 (not 8 x g6.4xlarge).
row l4x1_on_demand '.offer == "gcp_2026/g2-standard-4" and .price_usd_per_h == 0.70683' "$tmp/c.json"
row l4x8_spot_aws '.offer == "aws_2026/g6.48xlarge" and .price_usd_per_h == 3.7289 and .offer_date == "2026-11-27"' "$tmp/c.json"
# A named offer is dated and sourced too, with no choice.
row named_p5 '.offer_choice == null and .offer_date == "2026-11-26" and .offer_instances == 1' "$tmp/c.json"
# Same placement, same throughput: the cheapest on-demand row costs 23.60 / 55.04 of the named p5's.
od=$(jq '.rows[] | select(.option == "h100x8_on_demand") | .cost_to_target_usd' "$tmp/c.json")
p5=$(jq '.rows[] | select(.option == "named_p5") | .cost_to_target_usd' "$tmp/c.json")
awk -v a="$od" -v b="$p5" 'BEGIN { r = a / b; exit !(r > 0.4285 && r < 0.4290) }' || fail "cost ratio $od / $p5, expected 23.60/55.04 = 0.42878"
# Deterministic: the same study twice is byte-identical.
"$bin" compare "$src/tests/data/studies/cheapest_offer.yaml" --format json >"$tmp/c2.json" 2>/dev/null
cmp -s "$tmp/c.json" "$tmp/c2.json" || fail "two runs differ"

# No offer holds it: file:line: offer: ..., exit 2.
sed 's/offer_provider: aws}/offer_provider: nosuchcloud}/' "$src/tests/data/studies/cheapest_offer.yaml" >"$tmp/bad.yaml"
set +e
"$bin" compare "$tmp/bad.yaml" >/dev/null 2>"$tmp/bad.err"; rc=$?
set -e
[[ $rc == 2 ]] || fail "no offer: rc $rc"
grep -Eq "bad.yaml:[0-9]+: options.offer: no price offer holds 8 x h100_sxm5 at preemptible, provider nosuchcloud: .*aws_2026/p5.48xlarge: provider aws" \
  "$tmp/bad.err" || fail "no offer error: $(cat "$tmp/bad.err")"
# A filter without cheapest is refused.
sed 's|offer: aws_2026/p5.48xlarge}|offer: aws_2026/p5.48xlarge, offer_region: us-east-1}|' \
  "$src/tests/data/studies/cheapest_offer.yaml" >"$tmp/bad2.yaml"
set +e
"$bin" compare "$tmp/bad2.yaml" >/dev/null 2>"$tmp/bad2.err"; rc=$?
set -e
[[ $rc == 2 ]] && grep -Eq "bad2.yaml:[0-9]+: options.offer_region: only with offer: cheapest" "$tmp/bad2.err" ||
  fail "filter without cheapest: rc $rc $(cat "$tmp/bad2.err")"

# plan: 16 GPUs on hosts of 8 = 2 whole nebius nodes (1-GPU offers would split a host):
# 2 x 23.60 = 47.20 USD/h = 2.95 per GPU-hour; spot 2 x 10 = 20.
"$bin" plan --model gpt2 --cluster hgx_h100_ib3200 --gpus 16 --global-batch 64 --seq-len 1024 --top 1 \
  --offer cheapest --format json >"$tmp/p.json" 2>"$tmp/p.err" || fail "plan: $(cat "$tmp/p.err")"
jq -e ".offer.id == \"$nebius8\" and .offer.usd_per_gpu_h == 2.95 and .ranked[0].usd_per_h == 47.2 and .offer.date == \"2026-11-26\"" \
  "$tmp/p.json" >/dev/null || fail "plan cheapest: $(jq -c .offer "$tmp/p.json")"
jq -e '.offer.choice | test("holding 16 x h100_sxm5 at on_demand: 2 x nebius_2026/")' "$tmp/p.json" >/dev/null ||
  fail "plan choice text: $(jq -c .offer "$tmp/p.json")"
"$bin" plan --model gpt2 --cluster hgx_h100_ib3200 --gpus 16 --global-batch 64 --seq-len 1024 --top 1 \
  --offer cheapest --tier spot --format json >"$tmp/ps.json" 2>/dev/null || fail "plan spot"
jq -e '.offer.usd_per_gpu_h == 1.25 and .ranked[0].usd_per_h == 20' "$tmp/ps.json" >/dev/null ||
  fail "plan cheapest spot: $(jq -c .offer "$tmp/ps.json")"
# A TPU slice is billed per chip: 256 v5e chips on spot = 64 x v5litepod-4 (0.9797) = 62.7008
# against 256 x v5litepod-1 (0.24493) = 62.70208.
"$bin" plan --model llama3_70b --cluster v5e-256 --global-batch 256 --seq-len 8192 --top 1 --offer cheapest \
  --tier spot --format json >"$tmp/t.json" 2>"$tmp/t.err" || fail "plan tpu: $(cat "$tmp/t.err")"
jq -e '.offer.id == "gcp_2026/tpu-v5litepod-4" and (.ranked[0].usd_per_h - 62.7008 | fabs) < 1e-9' "$tmp/t.json" >/dev/null ||
  fail "plan tpu cheapest: $(jq -c '{offer, usd: .ranked[0].usd_per_h}' "$tmp/t.json")"
set +e
"$bin" plan --model llama3_70b --cluster v5e-256 --global-batch 256 --seq-len 8192 --offer cheapest \
  --offer-provider aws >/dev/null 2>"$tmp/pe.err"; rc=$?
set -e
[[ $rc == 2 ]] && grep -q "^xpusim: error: --offer: no price offer holds 256 x tpu_v5e at on_demand, provider aws: gcp_2026/tpu-v5litepod-1: provider gcp" \
  "$tmp/pe.err" || fail "plan no offer: rc $rc $(cat "$tmp/pe.err")"

# sweep: the offer chosen per point, named in the row with its date and source.
cat >"$tmp/sweep.yaml" <<'YAML'
name: cheapest_sweep
fixed: {model: resnet50, batch: 64, precision: mixed_fp16, offer: cheapest, pricing: spot}
axes:
  hardware:
    - {device: h100_sxm5, count: 8, system: dgx_h100}
    - {device: h100_sxm5, count: 1}
YAML
"$bin" sweep "$tmp/sweep.yaml" -o "$tmp/rows.jsonl" >/dev/null 2>"$tmp/s.err" || fail "sweep: $(cat "$tmp/s.err")"
jq -se "length == 2 and .[0].offer_chosen == \"$nebius8\" and .[0].price_usd_per_h == 10 and .[0].offer_instances == 1
        and .[1].offer_chosen == \"nebius_2026/gpu-h100-sxm_1gpu-16vcpu-200gb\" and .[1].price_usd_per_h == 1.25
        and (.[0].offer_source | test(\"^https://\")) and .[0].offer_date == \"2026-11-26\"" "$tmp/rows.jsonl" >/dev/null ||
  fail "sweep rows: $(jq -c '{offer_chosen, price_usd_per_h, offer_date}' "$tmp/rows.jsonl")"
echo "cheapest offer: compare, plan and sweep OK"
