#!/usr/bin/env python3
"""Fills the empty `global_batch` of reference rows whose own note states the gradient
accumulation (NVIDIA DeepLearningExamples BERT pre-training rows:
'micro-batch derived = A/B (table lists batch/GPU ... with accumulation steps ...)', A = the
samples per GPU and optimizer step, B = the accumulation steps, A/B = batch_per_device).

global_batch = A x num_devices. Nothing outside the row is read; rows whose note does not say
it, or where A/B is not the row's batch_per_device, are left as they are. Usage:
  scripts/derive_global_batch.py IN.csv OUT.csv   (prints how many rows it filled)
"""
import csv
import re
import sys

PATTERN = re.compile(r"micro-batch derived = (\d+)/(\d+)")


def main(src, dst):
    with open(src, newline="") as f:
        rows = list(csv.reader(f))
    head = rows[0]
    col = {name: i for i, name in enumerate(head)}
    filled = 0
    for r in rows[1:]:
        if r[col["global_batch"]]:
            continue
        m = PATTERN.search(r[col["note"]])
        if not m:
            continue
        per_gpu, steps = int(m.group(1)), int(m.group(2))
        if per_gpu % steps or per_gpu // steps != int(r[col["batch_per_device"]]):
            continue
        r[col["global_batch"]] = str(per_gpu * int(r[col["num_devices"]]))
        filled += 1
    with open(dst, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    print(f"{dst}: global_batch filled on {filled} rows")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
