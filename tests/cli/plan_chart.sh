#!/usr/bin/env bash
# `xpusim plan --chart`: the Pareto chart of time vs cost to train is well-formed SVG with axis
# titles in words and units, one series per GPU count and a Pareto front line whose points no
# other point beats on both axes; headless Chromium renders it when installed (issue 30).
# Bad input: a chart path that is not .svg is an error naming --chart, exit 2.
# Usage: plan_chart.sh XPUSIM OUTDIR
set -uo pipefail
bin="$1"; out="$2"
mkdir -p "$out"
svg="$out/plan_pareto.svg"
rm -f "$svg"
"$bin" plan --model mpt_1b --cluster hgx_a100_roce1600 --device a100_sxm4_40gb --gpus 16 --global-batch 256 \
  --seq-len 2048 --framework llm_foundry --offer aws_2025/p4d.24xlarge --chart "$svg" --top 3 >/dev/null ||
  { echo "FAIL: plan --chart exit $?"; exit 1; }
python3 - "$svg" <<'PY' || exit 1
import re, sys, xml.etree.ElementTree as ET
NS = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()          # well-formed XML
assert root.tag == NS + "svg" and root.get("viewBox"), "no <svg viewBox>"
text = " ".join("".join(t.itertext()) for t in root.iter(NS + "text"))  # legend labels sit in <tspan>s
for want in ("time to train (days)", "cost to train (US$)", "Pareto front", "GPUs"):
    assert want in text, f"missing '{want}' in the chart's text"
counts = sorted(set(int(m) for m in re.findall(r"(\d+) GPUs", text)))
assert len(counts) >= 3, f"expected several GPU counts, got {counts}"
tips = [t.text for t in root.iter(NS + "title") if t.text]
pts = []
for tip in tips:
    m = re.search(r"([\d.e+]+) days, \$([\d,]+)", tip)
    if m and not tip.startswith("Pareto front"):
        pts.append((float(m.group(1)), float(m.group(2).replace(",", ""))))
front = []
for tip in tips:
    m = re.search(r"^Pareto front: .*?([\d.e+]+) days, \$([\d,]+)", tip)
    if m: front.append((float(m.group(1)), float(m.group(2).replace(",", ""))))
assert len(pts) > 10 and front, f"{len(pts)} points, {len(front)} on the front"
# Along the front time rises and cost falls; no drawn point is both faster and cheaper than a
# front point (the tooltips round: 0.1% slack).
for a, b in zip(front, front[1:]):
    assert a[0] <= b[0] and a[1] >= b[1], f"front not monotone: {a} {b}"
for f in front:
    for p in pts:
        assert not (p[0] < f[0] * 0.999 and p[1] < f[1] * 0.999), f"{p} dominates front point {f}"
print(f"ok: {len(pts)} points, {len(front)} on the front, GPU counts {counts}")
PY
if command -v chromium >/dev/null 2>&1; then
  chromium --headless --no-sandbox --disable-gpu --screenshot="$out/plan_pareto.png" --window-size=760,500 "file://$svg" \
    >/dev/null 2>&1 && [[ -s "$out/plan_pareto.png" ]] || { echo "FAIL: chromium did not render the chart"; exit 1; }
  echo "ok: rendered $(stat -c %s "$out/plan_pareto.png") bytes of PNG"
else
  echo "note: chromium not installed; the chart was checked as XML only"
fi
err="$("$bin" plan --model mpt_1b --cluster hgx_a100_roce1600 --gpus 16 --global-batch 256 --seq-len 2048 \
  --chart "$out/chart.png" 2>&1 >/dev/null)"; rc=$?
[[ $rc -eq 2 && "$err" == *"--chart"* ]] || { echo "FAIL: --chart x.png -> exit $rc, '$err'"; exit 1; }
echo "ok: --chart: $err"
