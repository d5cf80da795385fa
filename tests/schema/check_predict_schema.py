#!/usr/bin/env python3
"""One schema across engines: docs/schema/predict.schema.json validates real `predict --format
json` outputs of the analytical model on a GPU and on a CPU and of the TPU simulator, and the
GPU and TPU records carry every core field with a number (not null). Skips (exit 77) where the
jsonschema module is absent. Usage: check_predict_schema.py XPUSIM SOURCE_DIR"""
import json
import subprocess
import sys

try:
    import jsonschema
except ImportError:
    print("jsonschema not installed: skipped")
    sys.exit(77)

xpusim, src = sys.argv[1], sys.argv[2]
schema = json.load(open(f"{src}/docs/schema/predict.schema.json"))
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)

CASES = {
    "gpu_analytical": ["--model", "resnet50", "--device", "v100_sxm2_16gb", "--count", "8", "--system", "dgx1v_nvlink", "--batch", "64",
                       "--precision", "mixed_fp16"],
    "tpu": ["--model", "resnet50", "--device", "tpu_v2", "--count", "8", "--batch", "128", "--precision", "bf16"],
    "cpu_analytical": ["--model", "resnet50", "--device", "gce_skylake_vcpu", "--count", "8", "--batch", "32"],
}
CORE = ["flops_per_step", "achieved_flops_per_s", "mfu", "hbm_bytes_per_step", "power_w"]
CORE_UTIL = ["compute", "memory"]

records = {}
failures = 0
for name, args in CASES.items():
    out = subprocess.run([xpusim, "predict", *args, "--format", "json"], capture_output=True, text=True)
    if out.returncode != 0:
        print(f"FAIL {name}: exit {out.returncode}: {out.stderr}")
        failures += 1
        continue
    rec = json.loads(out.stdout)
    records[name] = rec
    errors = sorted(validator.iter_errors(rec), key=lambda e: list(e.path))
    for e in errors:
        print(f"FAIL {name}: {'/'.join(map(str, e.path))}: {e.message}")
        failures += 1
    print(f"{name}: engine {rec.get('engine')}, mfu {rec.get('mfu')}, utilization {rec.get('utilization')}")

# The comparison xpusim exists for: a GPU and a TPU record share every core field as a number.
for name in ("gpu_analytical", "tpu"):
    rec = records.get(name, {})
    for k in CORE:
        if not isinstance(rec.get(k), (int, float)):
            print(f"FAIL {name}: core field {k} is {rec.get(k)!r}, not a number")
            failures += 1
    for k in CORE_UTIL:
        if not isinstance(rec.get("utilization", {}).get(k), (int, float)):
            print(f"FAIL {name}: utilization.{k} is not a number")
            failures += 1
    # The definitions agree with each other: achieved = flops / step time.
    if isinstance(rec.get("flops_per_step"), (int, float)) and rec.get("step_time_s"):
        want = rec["flops_per_step"] / rec["step_time_s"]
        if abs(rec["achieved_flops_per_s"] - want) > 0.35 * want:
            print(f"FAIL {name}: achieved_flops_per_s {rec['achieved_flops_per_s']} far from flops/step_time {want}")
            failures += 1

# A record missing a core field must fail the schema (the test can fail).
broken = dict(records.get("gpu_analytical", {}))
broken.pop("mfu", None)
if validator.is_valid(broken):
    print("FAIL: the schema accepts a record without mfu")
    failures += 1

sys.exit(1 if failures else 0)
