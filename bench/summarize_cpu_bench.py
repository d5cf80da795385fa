#!/usr/bin/env python3
"""Summarises bench/cpu_vs_pytorch.sh results: medians per model, precision and framework,
the img/s ratio xpusim / PyTorch in the same run, xpusim's bf16 over its own fp32, peak RSS,
achieved GFLOP/s, the ISA each side used, and the load average seen during the runs.

fp32 peak = cores x fp32 lanes per vector x 2 FMA pipes x 2 flops per FMA x clock (GHz from
/proc/cpuinfo 'cpu MHz'); lanes are 16 where the CPU has avx512f, else 8 (AVX2). AMD Zen
cores have two FMA pipes (AMD Software Optimization Guide for the Zen 2/3 microarchitecture),
256 bits wide up to Zen 4, which splits 512-bit operations in two (there the 16-lane figure
is twice the real peak), 512 bits wide on Zen 5. bf16 rows are quoted against twice that:
avx512_bf16's VDPBF16PS does two bf16 products per fp32 lane."""
import json
import statistics
import sys


def cpu_ghz():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("cpu MHz"):
                return float(line.split(":")[1]) / 1000.0
    return float("nan")


def fp32_lanes():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return 16 if "avx512f" in line.split() else 8
    return 8


def main():
    rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
    cores = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    ghz = cpu_ghz()
    lanes = fp32_lanes()
    peak = cores * lanes * 2 * 2 * ghz
    print(f"fp32 peak: {cores} cores x {lanes} lanes x 2 FMA pipes x 2 flops x {ghz:.3f} GHz = {peak:.1f} GFLOP/s"
          f" (bf16: {2 * peak:.1f})")
    hdr = ("model", "batch", "precision", "reps", "xpusim img/s", "pytorch img/s", "ratio", "xpusim bf16/fp32",
           "xpusim RSS MiB", "pytorch RSS MiB", "xpusim step GFLOP/s", "pytorch step GFLOP/s",
           "xpusim conv+matmul GFLOP/s", "of peak", "load 1m median")
    print("\t".join(hdr))
    prec = lambda r: r.get("precision", "fp32")
    med = lambda rs, k: statistics.median(r[k] for r in rs) if rs else float("nan")
    keys = []
    for r in rows:
        if r["framework"] == "xpusim" and (r["model"], r["batch_per_device"], prec(r)) not in keys:
            keys.append((r["model"], r["batch_per_device"], prec(r)))
    isas = []
    for m, b, p in keys:
        x = [r for r in rows if r["framework"] == "xpusim" and r["model"] == m and prec(r) == p]
        t = [r for r in rows if r["framework"] != "xpusim" and r["model"] == m and prec(r) == p]
        x32 = [r for r in rows if r["framework"] == "xpusim" and r["model"] == m and prec(r) == "fp32"]
        xi, ti = med(x, "throughput_samples_per_s"), med(t, "throughput_samples_per_s")
        own = xi / med(x32, "throughput_samples_per_s") if p != "fp32" and x32 else float("nan")
        flops = x[0]["train_step_flops"]
        xg = flops / med(x, "step_time_s") / 1e9
        tg = flops / med(t, "step_time_s") / 1e9 if t else float("nan")
        cg = med(x, "conv_matmul_gflops_per_s")
        pk = peak if p == "fp32" else 2 * peak
        loads = [r["loadavg_1m"] for r in x + t if "loadavg_1m" in r]
        load = f"{statistics.median(loads):.2f}" if loads else "n/a"
        print("\t".join(str(v) for v in (
            m, b, p, len(x), f"{xi:.2f}", f"{ti:.2f}", f"{xi / ti:.2f}", f"{own:.2f}",
            f"{med(x, 'peak_rss_bytes') / 2**20:.0f}", f"{med(t, 'peak_rss_bytes') / 2**20:.0f}", f"{xg:.1f}",
            f"{tg:.1f}", f"{cg:.1f}", f"{cg / pk:.0%}", load)))
        for r in x:
            isas.append(f"xpusim {p}: isa {r.get('isa', '?')}, bf16_mode {r.get('bf16_mode', '?')}")
        for r in t:
            isas.append(f"{r['framework']} {p}: oneDNN isa {r.get('isa', '?')}, ATen {r.get('aten_capability', '?')}")
    for line in dict.fromkeys(isas):  # distinct, in order
        print(line)
    policies = sorted({r.get("omp_wait_policy", "default") for r in rows})
    print("OMP_WAIT_POLICY (both sides): " + ", ".join(policies))


if __name__ == "__main__":
    main()
