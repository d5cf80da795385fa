#!/usr/bin/env python3
# Turns bench/gpu_monitor.py's JSON lines into reference-format rows (the columns of
# tests/data/reference/published_calibration.csv) that `xpusim validate` reads: per training
# workload its throughput and the nvidia-smi readings as the monitoring metrics
# gpu_util_pct_smi, gpu_mem_ctrl_util_pct, gpu_power_w and gpu_mem_used_bytes (medians of the
# 100 ms samples). Usage: python3 bench/gpu_monitor_csv.py DEVICE DATE IN.jsonl... > OUT.csv
import csv, json, sys

device, date, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
w = csv.writer(sys.stdout, lineterminator="\n")
w.writerow(["source", "device", "num_devices", "setup", "framework", "model", "dataset", "batch_per_device",
            "precision", "data", "metric", "value", "unit", "note"])
for p in paths:
    for line in open(p):
        d = json.loads(line)
        if d.get("kind") != "train" or "error" in d:
            continue
        src = f"xpusim bench/gpu_monitor.py {date} ({d['gpu']})"
        # PyTorch 2.x eager in its layout for mixed precision; strict fp32 (TF32 off) is no stack
        # profile's (pytorch_2's fp32 runs TF32 convolutions): the calibration stack's.
        fw = ("pytorch-2.x-channels-last" if d["channels_last"] else "pytorch-2.x") if d["precision"].startswith("mixed") else ""
        base = [src, device, 1, "server_sxm", fw, d["model"], "imagenet" if d["model"] == "resnet50" else "cifar10",
                d["batch"], d["precision"], "synthetic"]
        note = (f"PyTorch {d['torch']} eager, cuDNN {d['cudnn']}, {'NHWC' if d['channels_last'] else 'NCHW'}, "
                f"SGD momentum; {d['smi_samples']} nvidia-smi samples at 100 ms; kernel-resident share "
                f"{d['kernel_resident_share_pct']:.1f} % (profiler); {d['kernels_per_step']:.0f} kernels per step; "
                f"SM clock {d['clocks_sm_median']:.0f} MHz")
        w.writerow(base + ["train_throughput", f"{d['throughput_samples_per_s']:.1f}",
                           "images/s", note])
        w.writerow(base + ["gpu_util_pct_smi", f"{d['utilization_gpu_median']:.0f}", "%", note])
        w.writerow(base + ["gpu_mem_ctrl_util_pct", f"{d['utilization_memory_median']:.0f}", "%", note])
        w.writerow(base + ["gpu_power_w", f"{d['power_draw_median']:.1f}", "W", note])
        w.writerow(base + ["gpu_mem_used_bytes", f"{int(d['memory_used_median'] * 2**20)}", "bytes",
                           note + f"; PyTorch reserved {d['torch_reserved_bytes']} B"])
