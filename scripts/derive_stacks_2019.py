#!/usr/bin/env python3
"""Writes tests/data/stacks_2019.csv: the rows of the shared reference CSVs that ran
the 2019 framework runtimes (PyTorch 1.0 and MXNet 1.x in NGC 18.09-18.12 containers, before
DALI and AMP became the examples' defaults), relabelled with the 2019 profiles' names so that
`xpusim calibrate --framework pytorch_1|mxnet_1` fits those profiles on them and on nothing else.

Selection (every row kept as published; only `framework` changes):
- PyTorch: NVIDIA DeepLearningExamples RN50v1.5 README at 3ac7dc49 (2018-10-01), container
  pytorch-ngc18.09 (torch DataLoader + PIL workers, apex fp16): framework -> pytorch-1.x.
  (The 2019-05-27 DGX-2 rows say "DGX-2 runs use DALI": not this stack, left out.)
- MXNet: the MxNet RN50v1.5 README at a8e1d1cd (2019-01-23), container mxnet-ngc18.12:
  framework -> mxnet-1.x; and RiseML's MXNet 18.03 row of published_calibration.csv, kept as
  `mxnet 18.03` (mxnet_18_03: the neutral profile of the earlier container, out of sample).
Usage: python3 scripts/derive_stacks_2019.py [shared reference dir]   (default tests/data/reference)
"""
import csv
import os
import sys

src = sys.argv[1] if len(sys.argv) > 1 else "tests/data/reference"
out_path = "tests/data/stacks_2019.csv"
cols = ["source", "device", "num_devices", "setup", "framework", "model", "dataset", "batch_per_device",
        "precision", "data", "metric", "value", "unit", "note"]
rows = []
with open(os.path.join(src, "published_calibration.csv"), newline="") as f:
    for r in csv.DictReader(f):
        if r["framework"] == "mxnet 18.03":
            rows.append({c: r[c] for c in cols})
with open(os.path.join(src, "modern_calibration.csv"), newline="") as f:
    for r in csv.DictReader(f):
        if r["framework"] == "pytorch" and "@3ac7dc49" in r["source"]:
            rows.append({**{c: r[c] for c in cols}, "framework": "pytorch-1.x"})
        elif r["framework"] == "mxnet" and "@a8e1d1cd" in r["source"]:
            rows.append({**{c: r[c] for c in cols}, "framework": "mxnet-1.x"})
with open(out_path, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
print(f"{out_path}: {len(rows)} rows")
