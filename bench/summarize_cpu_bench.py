#!/usr/bin/env python3
"""Summarises bench/cpu_vs_pytorch.sh results: medians per model and framework, the img/s
ratio xpusim / PyTorch, peak RSS, and achieved GFLOP/s against this machine's fp32 peak.

fp32 peak = cores x 8 fp32 lanes per 256-bit AVX2 register x 2 FMA pipes x 2 flops per
FMA x clock (GHz from /proc/cpuinfo 'cpu MHz'). AMD Zen cores have two 256-bit FMA pipes
(AMD Software Optimization Guide for the Zen 2/3 microarchitecture)."""
import json
import statistics
import sys


def cpu_ghz():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("cpu MHz"):
                return float(line.split(":")[1]) / 1000.0
    return float("nan")


def main():
    rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
    cores = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    ghz = cpu_ghz()
    peak = cores * 8 * 2 * 2 * ghz
    print(f"fp32 peak: {cores} cores x 8 lanes x 2 FMA pipes x 2 flops x {ghz:.3f} GHz = {peak:.1f} GFLOP/s")
    hdr = ("model", "batch", "reps", "xpusim img/s", "pytorch img/s", "ratio", "xpusim RSS MiB", "pytorch RSS MiB",
           "xpusim step GFLOP/s", "pytorch step GFLOP/s", "xpusim conv+matmul GFLOP/s", "of peak")
    print("\t".join(hdr))
    models = []
    for r in rows:
        if (r["model"], r.get("batch", r.get("batch_per_device"))) not in models and r["framework"] == "xpusim":
            models.append((r["model"], r["batch_per_device"]))
    for m, b in models:
        x = [r for r in rows if r["framework"] == "xpusim" and r["model"] == m]
        p = [r for r in rows if r["framework"] != "xpusim" and r["model"] == m]
        med = lambda rs, k: statistics.median(r[k] for r in rs) if rs else float("nan")
        xi, pi = med(x, "throughput_samples_per_s"), med(p, "throughput_samples_per_s")
        flops = x[0]["train_step_flops"]
        xg = flops / med(x, "step_time_s") / 1e9
        pg = flops / med(p, "step_time_s") / 1e9 if p else float("nan")
        cg = med(x, "conv_matmul_gflops_per_s")
        print("\t".join(str(v) for v in (
            m, b, len(x), f"{xi:.2f}", f"{pi:.2f}", f"{xi / pi:.2f}", f"{med(x, 'peak_rss_bytes') / 2**20:.0f}",
            f"{med(p, 'peak_rss_bytes') / 2**20:.0f}", f"{xg:.1f}", f"{pg:.1f}", f"{cg:.1f}", f"{cg / peak:.0%}")))


if __name__ == "__main__":
    main()
