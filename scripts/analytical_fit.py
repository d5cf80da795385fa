#!/usr/bin/env python3
"""Fits a device's `calibrate:` constants against the reference CSV rows of that device by
minimising MAPE (coordinate search in log space; no SciPy needed). A development helper for
the analytical engine: it calls build/devices/analytical/xpusim_analytical_check, which runs
xpusim's own predict() with `--set` overrides. `xpusim calibrate` is the general tool.

  scripts/analytical_fit.py DEVICE KEY=START[:LO:HI] ... [--csv tests/data/reference/published_calibration.csv]
"""
import math
import subprocess
import sys

args = sys.argv[1:]
csv = "tests/data/reference/published_calibration.csv"
if "--csv" in args:
    i = args.index("--csv")
    csv = args[i + 1]
    del args[i:i + 2]
device, specs = args[0], args[1:]
params = {}
for s in specs:
    k, v = s.split("=")
    parts = v.split(":")
    params[k] = [float(parts[0]), float(parts[1]) if len(parts) > 1 else 1e-6, float(parts[2]) if len(parts) > 2 else 1e9]


def mape(vals):
    cmd = ["build/devices/analytical/xpusim_analytical_check", csv, "--only", device, "--format", "csv"]
    cmd += [f"{device}:{k}={v:.6g}" for k, v in vals.items()]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if line.startswith("MAPE all"):
            return float(line.split()[-1].rstrip("%"))
    raise RuntimeError(out)


cur = {k: v[0] for k, v in params.items()}
best = mape(cur)
step = 0.4  # log-space step
while step > 0.01:
    improved = False
    for k, (_, lo, hi) in params.items():
        for sign in (+1, -1):
            trial = dict(cur)
            trial[k] = min(hi, max(lo, cur[k] * math.exp(sign * step)))
            m = mape(trial)
            if m < best - 1e-6:
                best, cur, improved = m, trial, True
                break
    if not improved:
        step /= 2
    print(f"MAPE {best:.3f}% " + " ".join(f"{k}={v:.4g}" for k, v in cur.items()), file=sys.stderr)
print(" ".join(f"{k}={v:.4g}" for k, v in cur.items()), f"MAPE={best:.3f}%")
