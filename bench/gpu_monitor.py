#!/usr/bin/env python3
# What the monitoring tools report on a lent GPU, next to what the kernels take (issue 31's
# monitoring metrics: gpu_util_pct_smi, gpu_mem_used_bytes, board power). For each training
# workload (PyTorch eager, synthetic data on the device):
#   - the median eager step (CUDA events);
#   - the kernels of 5 profiled steps (torch.profiler's Chrome trace): the union of kernel
#     intervals per step, i.e. the kernel-resident time nvidia-smi's utilization.gpu samples,
#     and the 12 longest kernels;
#   - nvidia-smi sampled every 100 ms during a steady loop of ~6 s: utilization.gpu,
#     utilization.memory, power.draw, memory.used, clocks.sm (medians, first second dropped);
#   - the idle board before any work.
# Writes one JSON object per line to argv[1]. Nothing is fitted on these figures: they are the
# held-out check of the monitoring model (validation/measured/README.md).
# Usage (on the GPU machine): python3 bench/gpu_monitor.py OUT.jsonl [--quick]
import json, os, subprocess, sys, tempfile, time, statistics
import torch, torch.nn as nn

out = open(sys.argv[1], "w")
QUICK = "--quick" in sys.argv
dev = torch.device("cuda")
props = torch.cuda.get_device_properties(0)
torch.backends.cudnn.benchmark = True
# fp32 means strict fp32 (the model's fp32; 2019 Turing had no TF32): no TF32 in cuDNN or cuBLAS.
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False

def emit(**kw):
    kw.update(gpu=props.name, torch=torch.__version__, cudnn=torch.backends.cudnn.version())
    out.write(json.dumps(kw) + "\n"); out.flush(); print(json.dumps(kw)[:600], flush=True)

SMI_FIELDS = ["utilization.gpu", "utilization.memory", "power.draw", "memory.used", "clocks.sm"]

def smi_start():
    f = tempfile.NamedTemporaryFile("w+", delete=False, suffix=".csv")
    p = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp," + ",".join(SMI_FIELDS),
                          "--format=csv,noheader,nounits", "-lms", "100"], stdout=f,
                         stderr=subprocess.DEVNULL)
    return p, f.name, time.time()

def smi_stop(handle, drop_s=1.0):
    p, name, t0 = handle
    p.terminate(); p.wait()
    rows = [l.split(",") for l in open(name).read().strip().splitlines() if l.strip()]
    os.unlink(name)
    n_drop = int(drop_s / 0.1)
    rows = rows[n_drop:] if len(rows) > n_drop + 3 else rows
    res = {"smi_samples": len(rows)}
    for i, k in enumerate(SMI_FIELDS):
        vals = []
        for r in rows:
            try: vals.append(float(r[i + 1]))
            except (ValueError, IndexError): pass
        if vals:
            key = k.replace(".", "_")
            res[key + "_median"] = statistics.median(vals)
            res[key + "_mean"] = sum(vals) / len(vals)
    return res

def kernel_union(trace_path, n_steps):
    ev = json.load(open(trace_path))
    ev = ev.get("traceEvents", ev)
    ks = [(e["ts"], e["ts"] + e.get("dur", 0), e.get("name", "")) for e in ev
          if isinstance(e, dict) and e.get("cat") in ("kernel", "Kernel") and e.get("ph") == "X"]
    if not ks: return {}
    ks.sort()
    union = 0.0; cur_s, cur_e = ks[0][0], ks[0][1]
    for s, e, _ in ks[1:]:
        if s > cur_e: union += cur_e - cur_s; cur_s, cur_e = s, e
        else: cur_e = max(cur_e, e)
    union += cur_e - cur_s
    by_name = {}
    for s, e, n in ks: by_name[n[:90]] = by_name.get(n[:90], 0.0) + (e - s)
    top = sorted(by_name.items(), key=lambda kv: -kv[1])[:12]
    span = ks[-1][1] - ks[0][0]
    return {"kernels_per_step": len(ks) / n_steps, "kernel_union_s_per_step": union / n_steps / 1e6,
            "kernel_sum_s_per_step": sum(e - s for s, e, _ in ks) / n_steps / 1e6,
            "profiled_span_s_per_step": span / n_steps / 1e6,
            "top_kernels_s_per_step": [[n, d / n_steps / 1e6] for n, d in top]}

def make_step(model, x, y, prec, lr=0.01):
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    ac = {"mixed_fp16": torch.float16, "mixed_bf16": torch.bfloat16}.get(prec)
    scaler = torch.amp.GradScaler("cuda", enabled=(prec == "mixed_fp16"))
    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=ac or torch.float32, enabled=ac is not None):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward(); scaler.step(opt); scaler.update()
    return step

def cnn10():
    layers, c = [], 3
    for w in (64, 128, 256):
        for _ in range(3):
            layers += [nn.Conv2d(c, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU(inplace=True)]
            c = w
        if w != 256: layers.append(nn.MaxPool2d(2))
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 10)]
    return nn.Sequential(*layers)

class WideBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.bn1, self.c1 = nn.BatchNorm2d(cin), nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn2, self.c2 = nn.BatchNorm2d(cout), nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.sc = None if (cin == cout and stride == 1) else nn.Conv2d(cin, cout, 1, stride, bias=False)
    def forward(self, x):
        o = torch.relu(self.bn1(x))
        y = self.c1(o); y = self.c2(torch.relu(self.bn2(y)))
        return y + (x if self.sc is None else self.sc(o))

def wrn28_10():
    layers, c = [nn.Conv2d(3, 16, 3, 1, 1, bias=False)], 16
    for w, s in ((160, 1), (320, 2), (640, 2)):
        for i in range(4):
            layers.append(WideBlock(c, w, s if i == 0 else 1)); c = w
    layers += [nn.BatchNorm2d(c), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 10)]
    return nn.Sequential(*layers)

def resnet50():
    import torchvision
    return torchvision.models.resnet50()

def measure(name, build, batch, prec, hw, classes, steady_s=6.0, cl=False):
    try:
        torch.cuda.empty_cache(); torch.cuda.reset_peak_memory_stats()
        model = build().to(dev)
        x = torch.randn(batch, 3, hw, hw, device=dev)
        if cl: model = model.to(memory_format=torch.channels_last); x = x.to(memory_format=torch.channels_last)
        y = torch.randint(0, classes, (batch,), device=dev)
        step = make_step(model, x, y, prec)
        for _ in range(15): step()
        torch.cuda.synchronize()
        ts = []
        for _ in range(20):
            a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
            a.record(); step(); b.record(); torch.cuda.synchronize(); ts.append(a.elapsed_time(b) / 1e3)
        ts.sort(); t_sync = ts[len(ts) // 2]
        # Steady loop without per-step synchronisation (how training scripts run), sampled by nvidia-smi.
        h = smi_start(); time.sleep(0.3)
        t0 = time.time(); n = 0
        while time.time() - t0 < steady_s:
            step(); n += 1
            if n % 10 == 0: torch.cuda.synchronize()
        torch.cuda.synchronize(); t_loop = (time.time() - t0) / n
        smi = smi_stop(h)
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(5): step()
            torch.cuda.synchronize()
        tp = tempfile.mktemp(suffix=".json"); prof.export_chrome_trace(tp)
        ku = kernel_union(tp, 5); os.unlink(tp)
        emit(kind="train", model=name, batch=batch, precision=prec, channels_last=cl,
             step_s_synced_median=t_sync, step_s_loop=t_loop, throughput_samples_per_s=batch / t_loop,
             kernel_resident_share_pct=100 * ku.get("kernel_union_s_per_step", 0) / t_loop,
             torch_peak_allocated_bytes=torch.cuda.max_memory_allocated(),
             torch_reserved_bytes=torch.cuda.memory_reserved(), **smi, **ku)
        del model, x, y, step
    except Exception as e:
        emit(kind="train", model=name, batch=batch, precision=prec, error=str(e)[:300])

# Idle board first (nothing resident; the context exists).
torch.zeros(1, device=dev); torch.cuda.synchronize()
h = smi_start(); time.sleep(3.0); emit(kind="idle", **smi_stop(h, drop_s=0.5))

RUNS = [("cnn10", cnn10, 128, "fp32", 32, 10), ("cnn10", cnn10, 1024, "fp32", 32, 10),
        ("resnet50", resnet50, 256, "mixed_fp16", 224, 1000)]
if not QUICK:
    # cnn10 at 16: a step too short for the host to stay ahead (PyTorch's per-op dispatch shows).
    RUNS = [("cnn10", cnn10, 16, "fp32", 32, 10), ("cnn10", cnn10, 128, "fp32", 32, 10), ("cnn10", cnn10, 512, "fp32", 32, 10),
            ("cnn10", cnn10, 1024, "fp32", 32, 10), ("wrn28_10", wrn28_10, 128, "fp32", 32, 10),
            ("resnet50", resnet50, 64, "fp32", 224, 1000), ("resnet50", resnet50, 256, "mixed_fp16", 224, 1000)]
ONLY = os.environ.get("GPU_MONITOR_ONLY")  # e.g. "resnet50:64:fp32": that run alone
if ONLY: RUNS = [r for r in RUNS if f"{r[0]}:{r[2]}:{r[3]}" == ONLY]
T0 = time.time()
for r in RUNS:
    if time.time() - T0 > float(os.environ.get("GPU_MONITOR_BUDGET_S", "200")):
        emit(kind="skipped", model=r[0], batch=r[2], reason="time budget"); continue
    # channels-last only where cuDNN has native NHWC kernels (fp16); fp32 NHWC adds transposes.
    measure(*r, cl=(r[0] == "resnet50" and r[3] != "fp32"))
