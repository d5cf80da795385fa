"""Runs the notebook-style example docs/examples/tpu_hbm_sweep.py headless (MPLBACKEND=Agg) as a
reader would, in a scratch directory, and checks what it claims: the plot is written (a PNG
file), the table has one row per bandwidth asked for, and training throughput rises with HBM
bandwidth (never falls, and the widest bus beats the narrowest). Run by ctest
(docs.example_tpu_hbm_sweep); exits 77 (skipped) without the module, pandas or matplotlib."""
import csv
import os
import subprocess
import sys
import tempfile

for mod in ("xpusim", "pandas", "matplotlib"):
    try:
        __import__(mod)
    except ImportError as e:
        print(f"{mod} not importable ({e}); skipping")
        sys.exit(77)

src = os.environ.get("XPUSIM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
example = os.path.join(src, "docs", "examples", "tpu_hbm_sweep.py")
bandwidths = [100, 200, 400, 819, 1600]
with tempfile.TemporaryDirectory() as d:
    env = dict(os.environ, MPLBACKEND="Agg")
    p = subprocess.run([sys.executable, example, "--out", "hbm.png", "--csv", "hbm.csv",
                        "--bandwidths", ",".join(map(str, bandwidths))],
                       cwd=d, env=env, capture_output=True, text=True, timeout=600)
    print(p.stdout)
    if p.returncode != 0:
        sys.exit(f"FAIL: the example exited {p.returncode}\n{p.stderr}")
    png = os.path.join(d, "hbm.png")
    if not os.path.isfile(png) or os.path.getsize(png) < 1000:
        sys.exit("FAIL: no plot written")
    with open(png, "rb") as f:
        if f.read(8) != b"\x89PNG\r\n\x1a\n":
            sys.exit("FAIL: the plot is not a PNG file")
    rows = list(csv.DictReader(open(os.path.join(d, "hbm.csv"))))
if [float(r["hbm_bandwidth_gbps"]) for r in rows] != [float(b) for b in bandwidths]:
    sys.exit(f"FAIL: rows {[r['hbm_bandwidth_gbps'] for r in rows]}, asked for {bandwidths}")
tput = [float(r["throughput_samples_per_s"]) for r in rows]
for a, b, bw in zip(tput, tput[1:], bandwidths[1:]):
    if b < a * (1 - 1e-9):
        sys.exit(f"FAIL: throughput fell from {a} to {b} at {bw} GB/s")
if not tput[-1] > 1.05 * tput[0]:
    sys.exit(f"FAIL: throughput did not rise with bandwidth: {tput}")
print(f"example ok: throughput {tput[0]:.1f} -> {tput[-1]:.1f} samples/s from {bandwidths[0]} to {bandwidths[-1]} GB/s")
