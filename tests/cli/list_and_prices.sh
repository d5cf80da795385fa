#!/usr/bin/env bash
# First contact and today's prices through the CLI: `xpusim` alone prints the help; `list`
# names devices, systems, studies, models, frameworks and offers (table and JSON; every offer dated and
# sourced, prices older than a year flagged on stderr); `list offers --catalog vms.csv` maps a
# SkyPilot catalog to devices and systems; CLI11's parse errors read "xpusim: error: ..." with
# exit 2; an unknown device, study or sweep name gets a did-you-mean.
# Usage: list_and_prices.sh XPUSIM SOURCE_DIR
set -euo pipefail
bin="$1" src="$2"
fixture="$src/tests/data/skypilot/aws/vms.csv"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export XPUSIM_TODAY=2026-11-26

# xpusim alone: the help, exit 0, naming the list command.
"$bin" >"$tmp/help" 2>&1 || fail "xpusim alone exited $?"
grep -q "Subcommands:" "$tmp/help" && grep -q "list" "$tmp/help" || fail "xpusim alone did not print the help"

# list kinds: tables with the shipped names.
"$bin" list devices | grep -q "h100_sxm5" || fail "list devices lacks h100_sxm5"
"$bin" list systems | grep -q "dgx_h100" || fail "list systems lacks dgx_h100"
"$bin" list studies | grep -q "riseml_resnet50" || fail "list studies lacks riseml_resnet50"
"$bin" list models --format json | jq -e '.models | map(.name) | index("resnet50") != null' >/dev/null ||
  fail "list models --format json lacks resnet50"
"$bin" list clusters >/dev/null || fail "list clusters failed"
# Datasets (what --dataset names): a text corpus shows its documents' mean length, an image set none.
"$bin" list datasets --format json | jq -e '(.datasets[] | select(.name == "wikipedia_bookcorpus") | .document_tokens_mean > 0)
  and (.datasets[] | select(.name == "imagenet") | .document_tokens_mean == null)' >/dev/null ||
  fail "list datasets: wikipedia_bookcorpus's document length or imagenet's absence"
# Frameworks: each profile with the names it answers to; the calibration stack says it is
# neutral, a modelled stack does not; profiles sharing a name show the versions that pick them.
"$bin" list frameworks --format json >"$tmp/fw.json"
jq -e '.frameworks[] | select(.name == "pytorch_2") | (.names | index("pytorch-2.x") != null) and .neutral == false' \
  "$tmp/fw.json" >/dev/null || fail "list frameworks: pytorch_2 answers to pytorch-2.x and is not neutral"
jq -e '.frameworks[] | select(.name == "tf_cnn_benchmarks") | .neutral == true' "$tmp/fw.json" >/dev/null ||
  fail "list frameworks: tf_cnn_benchmarks is the neutral calibration stack"
jq -e '.frameworks[] | select(.name == "pytorch_ngc_2019") | .versions | index("pytorch-ngc19.*") != null' \
  "$tmp/fw.json" >/dev/null || fail "list frameworks: pytorch_ngc_2019 lacks its versions"
jq -e '.frameworks[] | select(.name == "pytorch_2_channels_last") | .base == "pytorch_2"' "$tmp/fw.json" >/dev/null ||
  fail "list frameworks: pytorch_2_channels_last names its base"
fw_table="$("$bin" list frameworks)"  # captured: grep -q closing a pipe early would fail the writer
grep -q "^pytorch_amp_dali  *pytorch  " <<<"$fw_table" || fail "list frameworks table: pytorch_amp_dali row"
fw_csv="$("$bin" list frameworks --format csv)"
grep -q '^pytorch_2,.*,pytorch-2.x; pytorch-2,' <<<"$fw_csv" || fail "list frameworks csv: names joined in one cell"

# Offers: every one has a date and a source; the 2017-2019 prices are flagged, today's are not.
"$bin" list offers --format json >"$tmp/offers.json" 2>"$tmp/offers.err"
jq -e '.offers | length > 20' "$tmp/offers.json" >/dev/null || fail "too few offers"
jq -e '[.offers[] | select(.date == "" or .source == "")] | length == 0' "$tmp/offers.json" >/dev/null ||
  fail "an offer without date or source"
jq -e '.offers[] | select(.offer == "aws_2026/p5.48xlarge") | .on_demand_usd_per_h == 55.04 and .spot_usd_per_h == 17.6289 and .stale == false' \
  "$tmp/offers.json" >/dev/null || fail "aws_2026/p5.48xlarge prices"
grep -q "xpusim: warning: gcp_2017 (6 offers): prices dated 2017-07 are [0-9]* days old (> 365)" "$tmp/offers.err" || fail "no warning for the 2017 prices"
if grep -q "aws_2026" "$tmp/offers.err"; then fail "today's AWS prices flagged as stale"; fi
# (Captured first: with pipefail, grep -q closing the pipe early would fail the writer.)
out="$("$bin" list offers -o - 2>/dev/null)"
grep -q "lambda_2026/gpu_8x_h100_sxm5" <<<"$out" || fail "-o - did not write the table to stdout"

# A SkyPilot catalog: offers mapped to devices and systems, region selection.
"$bin" list offers --catalog "$fixture" --format json >"$tmp/sky.json"
jq -e '.offers[] | select(.offer == "skypilot/p5.48xlarge") | .device == "h100_sxm5" and .count == 8 and .system == "dgx_h100" and .region == "us-east-1" and .spot_usd_per_h == 17.6289' \
  "$tmp/sky.json" >/dev/null || fail "skypilot/p5.48xlarge not mapped"
jq -e '[.offers[].offer] | index("skypilot/trn1.32xlarge") == null' "$tmp/sky.json" >/dev/null ||
  fail "Trainium (no device) listed"
"$bin" list offers --catalog "$fixture" --region us-west-2 | grep -q "12.69" || fail "--region us-west-2 spot price"
set +e
"$bin" list offers --catalog "$fixture" --region mars-1 >/dev/null 2>"$tmp/err"; rc=$?
set -e
[[ $rc == 2 ]] && grep -q "^xpusim: error: .*region 'mars-1' not in the catalog" "$tmp/err" || fail "unknown region: rc $rc $(cat "$tmp/err")"

# Parse errors in the project's form; did-you-mean for names.
set +e
"$bin" list devices --bogus >/dev/null 2>"$tmp/err"; rc=$?
set -e
[[ $rc == 2 ]] && grep -q "^xpusim: error: .*--bogus" "$tmp/err" || fail "unknown flag: rc $rc $(cat "$tmp/err")"
set +e
"$bin" predict --model resnet50 --device h100_sxm >/dev/null 2>"$tmp/err"; rc=$?
set -e
[[ $rc == 2 ]] && grep -q "unknown device 'h100_sxm'; did you mean h100_sxm5" "$tmp/err" || fail "did-you-mean: rc $rc $(cat "$tmp/err")"
# A study or sweep given by a name that is not shipped: the known names, not a missing path.
set +e
"$bin" compare resnet50_cloud >/dev/null 2>"$tmp/err"; rc=$?
set -e
[[ $rc == 2 ]] && grep -q "^xpusim: error: study: unknown study 'resnet50_cloud'; did you mean resnet50_cloud_2026" "$tmp/err" ||
  fail "unknown study: rc $rc $(cat "$tmp/err")"
set +e
"$bin" sweep tpu_v2_mxu --output "$tmp/s.csv" >/dev/null 2>"$tmp/err"; rc=$?
set -e
[[ $rc == 2 ]] && grep -q "^xpusim: error: sweep: unknown sweep 'tpu_v2_mxu'; did you mean tpu_v2_mxu_hbm" "$tmp/err" ||
  fail "unknown sweep: rc $rc $(cat "$tmp/err")"
echo "list_and_prices: ok"
