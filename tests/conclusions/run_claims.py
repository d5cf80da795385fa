#!/usr/bin/env python3
"""Every claim of the five reference studies as a check (issue 31): claims.txt holds one line
per DIR/NUM claim of /work/shared/reference/seed_claims.md (a copy in tests/data/reference/),
claim -> command -> the published direction or number with its tolerance. This script runs the
commands (each once, cached), evaluates every claim and prints per-study counts.

Statuses: `assert` claims must hold (a change that flips one fails `ctest -L conclusions`);
`missed` claims are evaluated and must still be listed in docs/conclusions.md with their cause
(one that starts to hold is reported, to be promoted); `no` claims the tool cannot or should not
reproduce (no command; docs/conclusions.md gives the reason); `fitted` claims gave the number a
constant was fitted on: they are evaluated and must hold like `assert` (a change that loses the
fit fails), but they are calibration, not reproduction, and are counted apart (docs/conclusions.md
names the constant).

Usage: run_claims.py XPUSIM CLAIMS DOCS   (exit 1 when an asserted claim fails)
"""
import json
import re
import shlex
import subprocess
import sys

xpusim, claims_path, docs_path = sys.argv[1], sys.argv[2], sys.argv[3]
_cache = {}


def run(args):
    """JSON output of `xpusim ARGS --format json`, run once per argument string."""
    if args not in _cache:
        out = subprocess.run([xpusim] + shlex.split(args) + ["--format", "json"], capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError("xpusim %s: exit %d: %s" % (args, out.returncode, out.stderr.strip()[:300]))
        _cache[args] = json.loads(out.stdout)
    return _cache[args]


STUDIES = {}


def study(name):
    return run("compare configs/studies/%s.yaml" % name)


def row(name, option, target):
    for r in study(name)["rows"]:
        if r["option"] == option and r["target"] == target:
            return r
    raise KeyError("%s: no row %s x %s" % (name, option, target))


def hours(name, option, target):
    v = row(name, option, target)["hours_to_target"]
    if v is None:
        raise ValueError("%s x %s has no hours (%s)" % (option, target, row(name, option, target)["error"]))
    return v


def cost(name, option, target):
    v = row(name, option, target)["cost_to_target_usd"]
    if v is None:
        raise ValueError("%s x %s has no cost (%s)" % (option, target, row(name, option, target)["error"]))
    return v


def field(name, option, target, key):
    return row(name, option, target)[key]


def p(args):
    """A prediction: `xpusim predict ARGS`."""
    return run("predict " + args)


def thr(args):
    return p(args)["throughput_samples_per_s"]


def val(source_prefix, **where):
    """validate rows of the shared calibration CSV whose source starts with `source_prefix`
    and whose columns equal `where`."""
    doc = run("validate --reference tests/data/reference/published_calibration.csv")
    out = [r for r in doc["rows"] if r["source"].startswith(source_prefix) and r["status"] == "used"]
    for k, v in where.items():
        out = [r for r in out if r[k] == v]
    if not out:
        raise ValueError("no validate rows for %s %s" % (source_prefix, where))
    return out


def mape(rows):
    return sum(abs(r["error_pct"]) for r in rows) / len(rows)


def epoch(args, examples=50000):
    """Seconds per epoch of `examples` samples (CIFAR-10's 50,000 by default)."""
    return examples / thr(args)


def total(args, epochs=100, examples=50000):
    """A whole run: the one-off compile of the first epoch plus `epochs` epochs."""
    return p(args).get("compile_time_s", 0) + epochs * epoch(args, examples)


def fits(args):
    return p(args)["fits_in_memory"]


def util(args, resource):
    return p(args)["utilization"].get(resource, 0)


def near(x, ref, tol):
    """x within a relative `tol` of `ref`."""
    return abs(x / ref - 1) <= tol


def within(x, lo, hi):
    return lo <= x <= hi


def main():
    claims, defs = [], []
    for n, line in enumerate(open(claims_path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.startswith("def "):  # def NAME = EXPRESSION: a shorthand the checks use
            name, expr = line[4:].split("=", 1)
            defs.append((name.strip(), expr.strip()))
            continue
        parts = [x.strip() for x in line.split(" | ")]
        if len(parts) != 5:
            sys.exit("%s:%d: expected 5 fields 'id | tag | status | check | cause', got %d" % (claims_path, n, len(parts)))
        cid, tag, status, check, cause = parts
        if status not in ("assert", "fitted", "missed", "no") or tag not in ("DIR", "NUM"):
            sys.exit("%s:%d: status is assert|fitted|missed|no and tag DIR|NUM" % (claims_path, n))
        if status in ("assert", "fitted") and check == "-":
            sys.exit("%s:%d: claim %s: an evaluated claim needs a check" % (claims_path, n, cid))
        if status != "assert" and cause == "-":
            sys.exit("%s:%d: claim %s: a claim not reproduced needs its cause" % (claims_path, n, cid))
        claims.append((n, cid, tag, status, check, cause))

    docs = open(docs_path, encoding="utf-8").read()
    env = {k: v for k, v in globals().items() if not k.startswith("_")}
    for name, expr in defs:
        env[name] = eval(expr, env)
    failed, per_study = [], {}
    for n, cid, tag, status, check, cause in claims:
        s = per_study.setdefault(cid.split(".")[0], {"assert": 0, "fitted": 0, "missed": 0, "no": 0})
        s[status] += 1
        if status != "assert" and "| " + cid + " |" not in docs:
            failed.append("%s: claim %s is %s but docs/conclusions.md does not list it" % (n, cid, status))
        if status == "no":
            continue
        if check == "-":  # missed for want of a metric or a model: nothing to run
            print("%-6s %-4s %-7s missed (no command: %s)" % (cid, tag, status, cause))
            continue
        try:
            ok = bool(eval(check, env))
            why = ""
        except Exception as e:  # a command that fails is a failed claim, with the reason
            ok, why = False, " (%s: %s)" % (type(e).__name__, e)
        mark = "ok  " if ok else "FAIL"
        if status == "missed":
            mark = "now holds: promote to assert" if ok else "missed"
        print("%-6s %-4s %-7s %s%s" % (cid, tag, status, mark, why))
        if status in ("assert", "fitted") and not ok:
            failed.append("%d: claim %s: %s%s" % (n, cid, check, why))
    print()
    names = {"1": "RiseML TPUv2 vs 4x V100", "2": "cloud CPUs vs K80", "3": "Titan RTX TF/PyTorch/MXNet",
             "4": "tf_cnn_benchmarks", "5": "2x 2080 Ti vs Colab TPU"}
    for k in sorted(per_study):
        s = per_study[k]
        print("study %s (%s): %d of %d DIR/NUM claims reproduced and asserted; %d fitted on (held, not counted); "
              "%d missed; %d not producible" % (k, names.get(k, "?"), s["assert"], sum(s.values()), s["fitted"],
                                                s["missed"], s["no"]))
    for f in failed:
        print("FAILED " + f)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
