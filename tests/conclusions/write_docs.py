#!/usr/bin/env python3
"""Writes docs/conclusions.md from tests/conclusions/claims.txt and seed_claims.md (issue 31):
the counts per study and every missed or not producible claim with its cause. Run from the
source root after editing claims.txt: python3 tests/conclusions/write_docs.py"""
import re

claims = [l for l in open("tests/conclusions/claims.txt", encoding="utf-8").read().split("\n") if re.match(r"^\d+\.\d+ \|", l)]
seed = open("tests/data/reference/seed_claims.md", encoding="utf-8").read()


def claim_text(cid):
    m = re.search(r"^\| " + re.escape(cid) + r" \| ([^|]*)\|", seed, re.M)
    return m.group(1).strip() if m else ""


names = {"1": "RiseML: TPUv2 vs 4x V100 on ResNet-50", "2": "Cloud CPUs vs a K80",
         "3": "Titan RTX with TensorFlow, PyTorch, MXNet", "4": "tf_cnn_benchmarks", "5": "2x RTX 2080 Ti vs Colab TPU v2"}
out = [open("tests/conclusions/docs_head.md", encoding="utf-8").read().rstrip("\n"), "",
       "| study | DIR/NUM claims | asserted | fitted on | missed | not producible |", "|---|---|---|---|---|---|"]
counts = {}
for l in claims:
    cid, tag, st, chk, cause = [x.strip() for x in l.split(" | ")]
    c = counts.setdefault(cid.split(".")[0], {"assert": 0, "fitted": 0, "missed": 0, "no": 0})
    c[st] += 1
for k in sorted(counts):
    c = counts[k]
    out.append("| %s. %s | %d | %d | %d | %d | %d |" % (k, names[k], sum(c.values()), c["assert"], c["fitted"], c["missed"],
                                                         c["no"]))
out.append("")
for st, title in (("fitted", "Claims a constant was fitted on (held, not counted as reproduced)"),
                  ("missed", "Missed claims and their causes"), ("no", "Claims the tool cannot or should not reproduce")):
    rows = []
    for l in claims:
        cid, tag, s2, chk, cause = [x.strip() for x in l.split(" | ")]
        if s2 == st:
            rows.append("| %s | %s | %s |" % (cid, claim_text(cid).replace("|", "/"), cause.replace("|", "/")))
    if rows or st != "fitted":  # the fitted section only when a claim is fitted on
        column = "constant fitted on it" if st == "fitted" else "cause"
        out += ["## " + title, "", "| # | claim (seed_claims.md) | %s |" % column, "|---|---|---|"] + rows + [""]
open("docs/conclusions.md", "w", encoding="utf-8").write("\n".join(out))
