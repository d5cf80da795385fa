#!/usr/bin/env python3
"""PyTorch peer for `xpusim run --backend cpu`: times training steps of a torchvision model
on one fixed synthetic batch with SGD momentum, as tf_cnn_benchmarks does (warm-up steps
excluded, mean of the timed steps). --precision bf16 runs forward and loss under
torch.autocast("cpu", dtype=torch.bfloat16) (fp32 weights and optimizer, as xpusim's bf16).
Prints one JSON object, with the ISA oneDNN picks inside PyTorch and ATen's vector ISA.
Needs Debian's python3-torch and python3-torchvision (run with /usr/bin/python3)."""
import argparse
import contextlib
import json
import os
import re
import resource
import subprocess
import sys
import time

import torch
import torchvision

INPUT_PX = {"resnet50": 224, "alexnet": 224, "vgg16": 224, "inception_v3": 299}


def build(name):
    if name == "inception_v3":
        # Same graph as xpusim's zoo model: auxiliary classifier trained with its own loss.
        return torchvision.models.inception_v3(weights=None, aux_logits=True, init_weights=False)
    return getattr(torchvision.models, name)(weights=None)


def onednn_isa():
    """The ISA line PyTorch's bundled oneDNN prints in verbose mode, from a child process
    running one oneDNN convolution (so this process's RSS and timing are untouched)."""
    code = ("import torch; torch.mkldnn_convolution(torch.randn(1, 16, 8, 8), torch.randn(16, 16, 3, 3), None,"
            " [1, 1], [1, 1], [1, 1], 1)")
    try:
        out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, ONEDNN_VERBOSE="1"),
                             capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    m = re.search(r"onednn_verbose,info,cpu,isa:(.*)", out)
    return m.group(1).strip() if m else "unknown"


def aten_capability():
    m = re.search(r"CPU capability usage: (\S+)", torch.__config__.show())
    return m.group(1) if m else "unknown"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True, choices=sorted(INPUT_PX))
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    model = build(a.model).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    px = INPUT_PX[a.model]
    x = torch.randn(a.batch, 3, px, px)
    y = torch.randint(0, 1000, (a.batch,))
    loss_fn = torch.nn.CrossEntropyLoss()

    def autocast():
        if a.precision == "bf16":
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def step():
        opt.zero_grad(set_to_none=True)
        with autocast():
            out = model(x)
            if isinstance(out, tuple):  # inception_v3: (logits, aux_logits)
                loss = loss_fn(out[0], y) + loss_fn(out[1], y)
            else:
                loss = loss_fn(out, y)
        loss.backward()
        opt.step()
        return float(loss)

    for _ in range(a.warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    dt = (time.perf_counter() - t0) / a.steps
    print(json.dumps({
        "framework": "pytorch " + torch.__version__,
        "model": a.model,
        "precision": a.precision,
        "isa": onednn_isa(),
        "aten_capability": aten_capability(),
        "batch": a.batch,
        "threads": a.threads,
        "step_time_s": dt,
        "throughput_samples_per_s": a.batch / dt,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }, sort_keys=True))


if __name__ == "__main__":
    main()
