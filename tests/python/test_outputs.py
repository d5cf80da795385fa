#!/usr/bin/env python3
"""Data outputs of every command (docs/outputs.md, issue 17).

Runs each command with --format csv and --format json and checks that
  * pandas.read_csv loads the CSV with numeric dtypes for the numeric fields, and the numbers
    read back equal the JSON's exactly (full precision, empty cells for null);
  * the CSV's columns are the JSON rows' fields (pandas.json_normalize, sep=".");
  * every JSON document is an object with schema_version and xpusim_version;
  * docs/outputs.md documents every field a command emits (DocsListEveryField).
Exit 77 (ctest: skipped) when pandas is missing.
Environment: XPUSIM_BIN (the binary), XPUSIM_SOURCE_DIR (the checkout).
"""
import io
import json
import math
import os
import re
import subprocess
import sys
import unittest

try:
    import pandas as pd
    from pandas.api.types import is_numeric_dtype
except ImportError:
    print("pandas is not installed (Debian python3-pandas): skipped")
    sys.exit(77)

BIN = os.environ.get("XPUSIM_BIN", "xpusim")
SRC = os.environ.get("XPUSIM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SMALL_REF = os.path.join(SRC, "tests", "python", "small_reference.csv")
TOPOLOGY = os.path.join(SRC, "tests", "golden", "systolic_hand_layers", "topology.csv")

# (section in docs/outputs.md, arguments, key of the JSON array whose elements are the CSV rows;
#  None: the CSV row is the document itself, less its arrays of objects). Commands that measure
#  (run, train) give other numbers on each run: MEASURED skips comparing their values.
CASES = [
    ("models", ["models"], "models"),
    ("backends", ["backends"], "backends"),
    ("graph", ["graph", "--model", "resnet50", "--batch", "32"], "ops"),
    ("graph --totals", ["graph", "--model", "resnet50", "--batch", "32", "--totals"], None),
    ("predict", ["predict", "--device", "p100_sxm2", "--count", "8", "--model", "resnet50", "--batch", "64"], None),
    ("predict", ["predict", "--device", "tpu_v2", "--count", "8", "--system", "cloud_tpu_v2-8", "--model", "resnet50",
                 "--batch", "128", "--precision", "bf16"], None),
    ("systolic", ["systolic", "--topology", TOPOLOGY, "--array", "8x8"], "layers"),
    ("compare", ["compare", "riseml_resnet50_published"], "rows"),
    ("validate", ["validate", "--reference", SMALL_REF], "rows"),
    ("calibrate", ["calibrate", "--reference", SMALL_REF, "--device", "v100_sxm2_16gb", "--max-evaluations", "5"], None),
    ("calibrate --leave-one-out study", ["calibrate", "--reference", SMALL_REF, "--leave-one-out", "study",
                                         "--max-evaluations", "5"], "leave_one_study_out"),
    ("predict", ["run", "--backend", "cpu", "--model", "mnist_mlp", "--batch", "32", "--steps", "2", "--warmup", "1",
                 "--threads", "1"], None),
]
# Real training needs Debian's dataset-fashion-mnist (installed by scripts/install-deps.sh).
if os.path.isdir("/usr/share/datasets/fashion-mnist"):
    CASES.append(("train", ["train", "--model", "mnist_mlp", "--train-limit", "256", "--test-limit", "64", "--epochs-max",
                            "2", "--threads", "1"], "epochs"))


MEASURED = ("run", "train")


def run(args, fmt):
    p = subprocess.run([BIN] + args + ["--format", fmt], capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(args)} --format {fmt}: exit {p.returncode}\n{p.stderr}")
    return p.stdout


def rows_of(doc, key):
    """The JSON records the CSV rows stand for."""
    if key is not None:
        return doc[key]
    return [{k: v for k, v in doc.items() if not is_table(v) and k not in ("schema_version", "xpusim_version")}]


def is_table(v):
    """An array of objects (or an empty array): rows of another table, JSON only."""
    return isinstance(v, list) and all(isinstance(e, dict) for e in v)


def flat_columns(rows):
    """Columns as json_normalize names them, without arrays of objects (other tables)."""
    cols = []
    for r in rows:
        for c, v in pd.json_normalize(r, sep=".").iloc[0].items():
            if is_table(v):
                continue
            if c not in cols:
                cols.append(c)
    return cols


def flat_record(r):
    out = {}
    for k, v in r.items():
        if isinstance(v, dict):
            for k2, v2 in flat_record(v).items():
                out[k + "." + k2] = v2
        else:
            out[k] = v
    return out


class CsvMatchesJson(unittest.TestCase):
    def check(self, section, args, key):
        doc = json.loads(run(args, "json"))
        self.assertIsInstance(doc, dict, "a JSON document is an object")
        self.assertIsInstance(doc.get("schema_version"), int)
        self.assertRegex(doc.get("xpusim_version", ""), r"^\d+\.\d+")
        rows = rows_of(doc, key)
        self.assertTrue(rows, f"{section}: no rows")
        text = run(args, "csv")
        self.assertNotIn(",-,", text, f"{section}: '-' for a missing value")
        df = pd.read_csv(io.StringIO(text), float_precision="round_trip", keep_default_na=True)
        self.assertEqual(len(df), len(rows), f"{section}: one CSV row per result")
        self.assertEqual(sorted(df.columns), sorted(flat_columns(rows)), f"{section}: CSV columns != JSON fields")
        flat = [flat_record(r) for r in rows]
        for c in df.columns:
            vals = [f.get(c) for f in flat]
            nums = [v for v in vals if v is not None]
            if nums and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in nums):
                self.assertTrue(is_numeric_dtype(df[c]), f"{section}: column {c} loads as {df[c].dtype}")
                if args[0] in MEASURED:
                    continue
                for i, v in enumerate(vals):  # full precision: the same double as the JSON
                    got = df[c].iloc[i]
                    if v is None:
                        self.assertTrue(math.isnan(got), f"{section}: {c}[{i}] should be empty")
                    else:
                        self.assertEqual(float(got), float(v), f"{section}: {c}[{i}] {got!r} != JSON {v!r}")

    def test_every_command(self):
        for section, args, key in CASES:
            with self.subTest(command=" ".join(args)):
                self.check(section, args, key)


def documented_fields(path):
    """{section: [regex]} from docs/outputs.md: `## xpusim <section>` headings and the
    backticked names in the first column of their tables; `<...>` matches any name part;
    "Also the fields of `xpusim X`" adds section X's names."""
    out, section, includes = {}, None, {}
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    for line in lines:
        m = re.match(r"^Also the fields of `xpusim ([^`]+)`", line)
        if m and section:
            includes.setdefault(section, []).append(m.group(1))
            continue
        m = re.match(r"^##\s+`?xpusim ([^`]+?)`?\s*$", line)
        if m:
            section = m.group(1).strip()
            out.setdefault(section, [])
            continue
        if line.startswith("## "):
            section = line[3:].strip()
            out.setdefault(section, [])
            continue
        m = re.match(r"^\|\s*`([^`]+)`", line)
        if m and section:
            pat = re.escape(m.group(1))
            pat = re.sub(r"<[^>]*>", ".+", pat.replace("\\<", "<").replace("\\>", ">"))
            out[section].append(re.compile("^" + pat + "$"))
    for section, others in includes.items():
        for o in others:
            out[section] = out[section] + out.get(o, [])
    return out


def emitted_fields(doc, prefix=""):
    """Every field name of a document: top-level and nested objects dotted, array elements' fields too."""
    names = set()
    for k, v in doc.items():
        names.add(prefix + k)
        if isinstance(v, dict):
            names |= emitted_fields(v, prefix + k + ".")
        elif isinstance(v, list):
            for e in v:
                if isinstance(e, dict):
                    names |= emitted_fields(e, prefix + k + "[].")
    return names


class DocsListEveryField(unittest.TestCase):
    # Objects keyed by data (a device, a model, a constant): their keys are values, documented
    # as <name> patterns like any other.
    def test_outputs_md_lists_every_field(self):
        docs = documented_fields(os.path.join(SRC, "docs", "outputs.md"))
        common = docs.get("Every document", [])
        for section, args, key in CASES:
            with self.subTest(command=" ".join(args)):
                self.assertIn(section, docs, f"docs/outputs.md has no section '## xpusim {section}'")
                doc = json.loads(run(args, "json"))
                cols = pd.read_csv(io.StringIO(run(args, "csv"))).columns
                names = emitted_fields(doc) | {(key + "[]." if key else "") + c for c in cols}
                pats = docs[section] + common
                missing = sorted(n for n in names if not any(p.match(n) for p in pats))
                self.assertEqual(missing, [], f"{section}: fields not in docs/outputs.md")


if __name__ == "__main__":
    unittest.main()
