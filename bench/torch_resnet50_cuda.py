#!/usr/bin/env python3
"""PyTorch ResNet-50 training throughput on one CUDA GPU: the speed reference that
scripts/gpu-check runs next to `xpusim run --backend cuda`. Synthetic data (one random
batch on the device), SGD momentum, fp32 or AMP fp16 (torch.autocast + GradScaler);
cudnn.benchmark on, as xpusim picks convolution algorithms by measurement. Prints the
mean images/s of the timed steps on the last line."""
import argparse
import time

import torch
import torchvision


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--precision", choices=["fp32", "tf32", "mixed_fp16"], default="fp32")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    # fp32 means fp32: TF32 off unless asked, like xpusim's fp32.
    torch.backends.cuda.matmul.allow_tf32 = a.precision == "tf32"
    torch.backends.cudnn.allow_tf32 = a.precision == "tf32"
    dev = torch.device("cuda")
    model = torchvision.models.resnet50().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    amp = a.precision == "mixed_fp16"
    scaler = torch.cuda.amp.GradScaler(enabled=amp)
    x = torch.rand(a.batch, 3, 224, 224, device=dev) * 2 - 1
    y = torch.randint(0, 1000, (a.batch,), device=dev)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(a.steps):
        step()
    torch.cuda.synchronize()
    dt = (time.perf_counter() - t) / a.steps
    print(f"{a.batch / dt:.1f}")


if __name__ == "__main__":
    main()
