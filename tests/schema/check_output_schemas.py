#!/usr/bin/env python3
"""One schema across commands: docs/schema/{compare,sweep,plan}.schema.json validate real
outputs of `compare --format json`, `sweep` (every JSONL row and the --summary json document)
and `plan --format json`, and the names agree between them (power_w, note, error). Negative
cases show the schemas can fail: the pre-issue-36 names (modelled_power_w, a note in
`error`, numbers written as text) are refused. Skips (exit 77) without the jsonschema module.
Usage: check_output_schemas.py XPUSIM SOURCE_DIR"""
import copy
import json
import os
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    print("jsonschema not installed: skipped")
    sys.exit(77)

xpusim, src = sys.argv[1], sys.argv[2]
failures = 0


def fail(msg):
    global failures
    print("FAIL " + msg)
    failures += 1


def validator(name, ref=None):
    schema = json.load(open(f"{src}/docs/schema/{name}.schema.json"))
    jsonschema.Draft202012Validator.check_schema(schema)
    if ref:  # a $defs entry, resolved against the file's own $defs
        schema = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": ref}
    return jsonschema.Draft202012Validator(schema)


def check(v, doc, what):
    for e in sorted(v.iter_errors(doc), key=lambda e: list(e.path)):
        fail(f"{what}: {'/'.join(map(str, e.path))}: {e.message[:300]}")


def run(args):
    p = subprocess.run([xpusim, *args], capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        fail(f"{' '.join(args)}: exit {p.returncode}: {p.stderr[-2000:]}")
        return None
    return p.stdout


# compare: a published study (given throughputs), today's prices, and one row of each kind.
compare_v = validator("compare")
compare_rows = []
for study in ["riseml_resnet50_published", f"{src}/tests/data/studies/today_gpus.yaml",
              f"{src}/tests/data/studies/schema_rows.yaml"]:
    out = run(["compare", study, "--format", "json"])
    if out is None:
        continue
    doc = json.loads(out)
    check(compare_v, doc, f"compare {os.path.basename(study)}")
    compare_rows += doc.get("rows", [])
by_option = {r["option"]: r for r in compare_rows}
want = {"costed": ("error", None), "synthetic": ("note", "synthetic data"), "too_big": ("note", "does not fit"),
        "no_room": ("error", "")}
for opt, (field, text) in want.items():
    r = by_option.get(opt)
    if r is None:
        fail(f"compare schema_rows: no row {opt}")
        continue
    other = "note" if field == "error" else "error"
    if text is None:  # a costed row has neither
        if r["note"] is not None or r["error"] is not None or r["cost_to_target_usd"] is None:
            fail(f"compare {opt}: a costed row with note {r['note']!r}, error {r['error']!r}")
    elif not (isinstance(r[field], str) and text in r[field]) or r[other] is not None:
        fail(f"compare {opt}: expected {field} containing {text!r}, got note {r['note']!r}, error {r['error']!r}")
if by_option.get("costed", {}).get("power_source") != "modelled":
    fail("compare costed: power_source is not 'modelled'")
# The old shape (a note in `error`, no `note` field) must not pass.
if compare_rows:
    old = copy.deepcopy({"schema_version": 2, "xpusim_version": "0.1", "study": "x", "description": "", "source": "",
                         "rows": [by_option.get("synthetic", compare_rows[0])]})
    old["rows"][0]["error"] = old["rows"][0].pop("note")
    if compare_v.is_valid(old):
        fail("compare schema accepts a row without `note`")

# sweep: the small sweep of the end-to-end tests, JSONL rows and the summary document.
row_v = validator("sweep", "#/$defs/row")
summary_v = validator("sweep")
with tempfile.TemporaryDirectory() as tmp:
    rows_path = os.path.join(tmp, "rows.jsonl")
    out = run(["sweep", f"{src}/tests/sweep/small.yaml", "-o", rows_path, "--summary", "json", "--jobs", "1"])
    rows = []
    if out is not None:
        check(summary_v, json.loads(out), "sweep --summary json")
        with open(rows_path) as f:
            for i, line in enumerate(f, 1):
                row = json.loads(line)
                rows.append(row)
                check(row_v, row, f"sweep rows.jsonl:{i}")
    if len(rows) != 24:
        fail(f"sweep: {len(rows)} rows, expected 24")
    for r in rows:
        if not isinstance(r.get("batch"), int) or not isinstance(r.get("count"), int):
            fail(f"sweep point {r.get('point')}: batch {r.get('batch')!r} / count {r.get('count')!r} not integers")
            break
    ok = [r for r in rows if r["status"] == "ok"]
    if not any(r["power_w"] and r["power_source"] == "modelled" for r in ok):
        fail("sweep: no ok row with a modelled power_w")
    if not any(r["status"] == "infeasible" and r["note"] for r in rows):
        fail("sweep: no infeasible row with a note (batch 512 of ResNet-50 does not fit a TPU v2 core)")
    if rows:
        bad = dict(rows[0])
        bad["batch"] = str(bad["batch"])
        if row_v.is_valid(bad):
            fail("sweep row schema accepts a number written as text")
        bad = dict(rows[0])
        bad["modelled_power_w"] = bad.pop("power_w")
        if row_v.is_valid(bad):
            fail("sweep row schema accepts modelled_power_w without power_w")
        bad = dict(rows[0])
        bad["error"] = "a note"
        if bad["status"] != "error" and row_v.is_valid(bad):
            fail("sweep row schema accepts an error on a row whose status is not error")
    # One name per meaning across commands: every field compare and sweep rows share is typed alike.
    shared = set(compare_rows[0]) & set(rows[0]) if compare_rows and rows else set()
    for k in ("power_w", "power_source", "note", "error", "bottleneck", "global_batch", "price_usd_per_h",
              "cost_to_target_usd", "energy_kwh"):
        if k not in shared:
            fail(f"compare and sweep rows do not share {k}")

# sweep with plan points (evaluate: plan): rows and summary of the shipped llm_plan_clusters.
plan_rows = []
with tempfile.TemporaryDirectory() as tmp:
    rows_path = os.path.join(tmp, "plan.jsonl")
    out = run(["sweep", f"{src}/configs/sweeps/llm_plan_clusters.yaml", "-o", rows_path, "--summary", "json"])
    if out is not None:
        check(summary_v, json.loads(out), "sweep (plan points) --summary json")
        with open(rows_path) as f:
            for i, line in enumerate(f, 1):
                row = json.loads(line)
                plan_rows.append(row)
                check(row_v, row, f"sweep plan.jsonl:{i}")
    if len(plan_rows) != 6 or not all(r["status"] == "ok" for r in plan_rows):
        fail(f"sweep (plan points): {len(plan_rows)} rows, expected 6 ok")
    if plan_rows:
        bad = dict(plan_rows[0])
        bad["sharding"] = "zero9"
        if row_v.is_valid(bad):
            fail("sweep row schema accepts sharding zero9 on a plan row")
        bad = dict(plan_rows[0])
        bad["mfu"] = 1.5
        if row_v.is_valid(bad):
            fail("sweep row schema accepts mfu 1.5 on a plan row")

# plan: a small dense model on an H100 cluster, with an offer.
plan_v = validator("plan")
out = run(["plan", "--model", "gpt2", "--cluster", "hgx_h100_ib3200", "--gpus", "16", "--global-batch", "64",
           "--seq-len", "1024", "--offer", "aws_2026/p5.48xlarge", "--top", "3", "--format", "json"])
if out is not None:
    doc = json.loads(out)
    check(plan_v, doc, "plan")
    if not doc.get("ranked"):
        fail("plan: no ranked configuration")
    bad = copy.deepcopy(doc)
    if bad.get("ranked"):
        bad["ranked"][0]["mfu"] = 1.5
        if plan_v.is_valid(bad):
            fail("plan schema accepts mfu 1.5")

print(f"{len(compare_rows)} compare rows, {len(rows)} sweep rows, {len(plan_rows)} plan sweep rows checked")
sys.exit(1 if failures else 0)
