# %% [markdown]
# # How much does HBM bandwidth buy a TPU? (notebook-style example)
#
# Sweeps the HBM bandwidth of one TPU v5e chip through the Python module (`xpusim.predict`
# with `overrides`, the CLI's `--set`), collects the predictions in a pandas DataFrame and
# plots training throughput against bandwidth with matplotlib. Each `# %%` block is a notebook
# cell (Jupyter / VS Code open this file as a notebook with jupytext); as a script:
#
#     PYTHONPATH=build/python MPLBACKEND=Agg python3 docs/examples/tpu_hbm_sweep.py --out hbm.png
#
# Needs the built module (or `pip install ./python`), pandas and matplotlib (Debian:
# python3-pandas, python3-matplotlib). tests/python/check_hbm_example.py runs it (ctest
# docs.example_tpu_hbm_sweep).

# %%
import argparse

import matplotlib
import matplotlib.pyplot as plt
import pandas as pd

import xpusim

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--device", default="tpu_v5e", help="TPU device (configs/devices/)")
parser.add_argument("--model", default="resnet50", help="zoo model")
parser.add_argument("--batch", type=int, default=128, help="samples per chip per step")
parser.add_argument("--bandwidths", default="100,200,300,400,600,819,1200,1600",
                    help="HBM bandwidths to try, GB/s, comma-separated")
parser.add_argument("--out", default="tpu_hbm_sweep.png", help="the plot (PNG)")
parser.add_argument("--csv", default="", help="also write the table as CSV here")
args, _ = parser.parse_known_args()  # a notebook kernel passes its own arguments

# %% [markdown]
# One prediction per bandwidth. `hbm_bandwidth_gbps` is the device YAML's key (GB/s); every
# other constant stays as configs/devices/ has it, so the curve isolates the memory system.

# %%
rows = []
for gbps in (float(b) for b in args.bandwidths.split(",")):
    r = xpusim.predict(model=args.model, device=args.device, batch=args.batch, precision="bf16",
                       overrides=[f"hbm_bandwidth_gbps={gbps:g}"])
    rows.append({
        "hbm_bandwidth_gbps": gbps,
        "throughput_samples_per_s": r["throughput_samples_per_s"],
        "step_time_s": r["step_time_s"],
        "mfu": r["mfu"],
        "utilization_memory": r["utilization"]["memory"],
    })
df = pd.DataFrame(rows)

# The device's own bandwidth, read from its YAML in the configs the module uses.
nominal = None
with open(f"{xpusim.config_dir()}/devices/{args.device}.yaml") as f:
    for line in f:
        if line.startswith("hbm_bandwidth_gbps:"):
            nominal = float(line.split(":")[1].split("#")[0])
df

# %% [markdown]
# Throughput against bandwidth: where the curve flattens, the chip is no longer waiting on HBM
# and more bandwidth buys nothing; the dotted line is the device's own bandwidth.

# %%
fig, ax = plt.subplots(figsize=(7, 4.2))
ax.plot(df["hbm_bandwidth_gbps"], df["throughput_samples_per_s"], marker="o")
if nominal:
    ax.axvline(nominal, linestyle=":", color="grey", label=f"{args.device} as built ({nominal:g} GB/s)")
    ax.legend()
ax.set_xlabel("HBM bandwidth (GB/s)")
ax.set_ylabel("training throughput (samples/s)")
ax.set_title(f"{args.model}, batch {args.batch} per chip, {args.device} (xpusim predict)")
ax.grid(True, alpha=0.3)
fig.tight_layout()
fig.savefig(args.out, dpi=100)
if args.csv:
    df.to_csv(args.csv, index=False)
print(df.to_string(index=False))
print(f"wrote {args.out} (matplotlib {matplotlib.__version__}, backend {matplotlib.get_backend()})")
