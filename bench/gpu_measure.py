#!/usr/bin/env python3
"""Measures a CUDA GPU with PyTorch for validating the analytical GPU model (issue 33).

Three groups, each timed with CUDA events (median of several timed repetitions after warm-up):
  kernels  cuBLAS GEMMs over shapes that cross wave boundaries (fp32, tf32, bf16, fp16, fp8
           where the GPU has it), cuDNN convolutions of ResNet-50's layers (forward and
           forward+backward), scaled-dot-product attention at several sequence lengths;
           achieved TFLOP/s against the datasheet peak given on the command line.
  train    training steps of the zoo's models written here from their published dimensions
           (torchvision ResNet-50; BERT-base/large encoders with the classifier or pre-training
           head; GPT-2 small): throughput, median step, peak memory. Synthetic data on the GPU.
  memory   the largest ResNet-50 fp32 batch that trains without running out of memory.
Writes `train.csv` in the reference format (tests/data/reference/README.md), `kernels.csv`
and `env.json` into --out. `--smoke` runs tiny sizes on whatever device exists (the CPU here)
so the script itself is tested without a GPU; nothing a smoke run prints is a measurement.
"""
import argparse
import contextlib
import csv
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# ---------------------------------------------------------------------------------------------
# compatibility: the GPU machine has PyTorch 2.x; Debian 12's python3-torch (1.13, used for the
# smoke test here) lacks scaled_dot_product_attention and torch.amp.GradScaler.

def sdpa(q, k, v, dropout_p=0.0, is_causal=False):
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=is_causal)
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if is_causal:
        n = q.shape[-2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return F.dropout(s.softmax(-1), dropout_p) @ v


def grad_scaler(enabled):
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler("cuda", enabled=enabled)
    return torch.cuda.amp.GradScaler(enabled=enabled)


# ---------------------------------------------------------------------------------------------
# timing


class Timer:
    """Times a callable: CUDA events on a GPU, perf_counter on the CPU (smoke runs only)."""

    def __init__(self, dev):
        self.cuda = dev.type == "cuda"

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def median_s(self, fn, reps, warmup, inner=1):
        for _ in range(warmup):
            fn()
        self.sync()
        times = []
        for _ in range(reps):
            if self.cuda:
                a = torch.cuda.Event(enable_timing=True)
                b = torch.cuda.Event(enable_timing=True)
                a.record()
                for _ in range(inner):
                    fn()
                b.record()
                b.synchronize()
                times.append(a.elapsed_time(b) / 1e3 / inner)
            else:
                t = time.perf_counter()
                for _ in range(inner):
                    fn()
                times.append((time.perf_counter() - t) / inner)
        return statistics.median(times)

    def auto_inner(self, fn, target_s=2e-3):
        """How many back-to-back calls make one timed repetition last about target_s
        (small kernels are shorter than launch jitter)."""
        fn()
        self.sync()
        t = self.median_s(fn, reps=1, warmup=0)
        return max(1, min(200, int(math.ceil(target_s / max(t, 1e-7)))))


# ---------------------------------------------------------------------------------------------
# kernels

def set_tf32(on):
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def gemm_shapes(smoke):
    if smoke:
        return [("square", 64, 64, 64), ("wave", 96, 64, 64)]
    shapes = [("square", s, s, s) for s in (128, 256, 512, 1024, 2048, 4096, 8192, 16384)]
    # M sweep at N = K = 4096: with 128x256 or 128x128 output tiles the tile count passes
    # 132 (H100/H200 SMs) and its multiples, so wave quantization shows as steps.
    shapes += [("wave_m", m, 4096, 4096) for m in
               (256, 512, 768, 1024, 1152, 1280, 1536, 2048, 2176, 2304, 3072, 4224, 4352, 6144, 8192)]
    # K sweep at M = N = 4096: fixed tile count, arithmetic intensity grows with K.
    shapes += [("k_sweep", 4096, 4096, k) for k in (128, 256, 512, 1024, 2048, 8192, 16384)]
    # Transformer-like skinny shapes (tokens x hidden x hidden and FFN).
    shapes += [("llm", 8192, 3 * 4096, 4096), ("llm", 8192, 4096, 4096), ("llm", 8192, 11008, 4096),
               ("llm", 8192, 4096, 11008), ("llm", 2048, 768, 768), ("llm", 2048, 3072, 768)]
    return shapes


def run_gemms(dev, timer, smoke, rows, peaks):
    dtypes = ["fp32", "tf32", "bf16", "fp16"]
    has_fp8 = dev.type == "cuda" and torch.cuda.get_device_capability(dev) >= (8, 9) \
        and hasattr(torch, "float8_e4m3fn") and hasattr(torch, "_scaled_mm")
    if has_fp8:
        dtypes.append("fp8")
    for dt in dtypes:
        for cls, m, n, k in gemm_shapes(smoke):
            if dt == "fp32" and m * n * k > 4096 ** 3:
                continue  # minutes of fp32 work for nothing new: the rate is flat by then
            try:
                t = time_gemm(dev, timer, dt, m, n, k)
            except Exception as e:  # noqa: BLE001 - an unsupported shape/dtype is a row, not a stop
                rows.append(dict(kind="gemm", shape_class=cls, dtype=dt, m=m, n=n, k=k, time_s="",
                                 tflops="", peak_tflops=peaks.get(dt, ""), note=f"failed: {e}"[:200]))
                continue
            fl = 2.0 * m * n * k
            rows.append(dict(kind="gemm", shape_class=cls, dtype=dt, m=m, n=n, k=k, time_s=f"{t:.6e}",
                             tflops=f"{fl / t / 1e12:.2f}", peak_tflops=peaks.get(dt, ""), note="torch.matmul (cuBLAS)"
                             if dt != "fp8" else "torch._scaled_mm e4m3 x e4m3 -> bf16, per-tensor scales"))
    set_tf32(False)


def time_gemm(dev, timer, dt, m, n, k):
    set_tf32(dt == "tf32")
    if dt == "fp8":
        a = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn).t()  # column-major, as required
        one = torch.ones((), device=dev)
        fn = lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)  # noqa: E731
    else:
        tdt = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dt]
        a = torch.randn(m, k, device=dev, dtype=tdt)
        b = torch.randn(k, n, device=dev, dtype=tdt)
        fn = lambda: torch.matmul(a, b)  # noqa: E731
    inner = timer.auto_inner(fn)
    return timer.median_s(fn, reps=5, warmup=2, inner=inner)


# ResNet-50's distinct convolutions: (cin, cout, kernel, stride, input size), torchvision v1.5
# (stride on the 3x3 of a bottleneck).
RESNET50_CONVS = [
    (3, 64, 7, 2, 224),
    (64, 64, 1, 1, 56), (64, 64, 3, 1, 56), (64, 256, 1, 1, 56), (256, 64, 1, 1, 56),
    (256, 128, 1, 1, 56), (128, 128, 3, 2, 56), (128, 512, 1, 1, 28), (256, 512, 1, 2, 56),
    (512, 128, 1, 1, 28), (128, 128, 3, 1, 28),
    (512, 256, 1, 1, 28), (256, 256, 3, 2, 28), (256, 1024, 1, 1, 14), (512, 1024, 1, 2, 28),
    (1024, 256, 1, 1, 14), (256, 256, 3, 1, 14),
    (1024, 512, 1, 1, 14), (512, 512, 3, 2, 14), (512, 2048, 1, 1, 7), (1024, 2048, 1, 2, 14),
    (2048, 512, 1, 1, 7), (512, 512, 3, 1, 7),
]


def run_convs(dev, timer, smoke, rows, peaks, deadline):
    batch = 2 if smoke else 128
    convs = RESNET50_CONVS[:3] if smoke else RESNET50_CONVS
    torch.backends.cudnn.benchmark = True
    for dt in (["fp32"] if smoke else ["tf32", "fp16"]):
        set_tf32(dt == "tf32")
        tdt = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[dt]
        for cin, cout, ks, st, hw in convs:
            if time.time() > deadline:
                break
            size = hw if not smoke else max(8, hw // 8)
            x = torch.randn(batch, cin, size, size, device=dev, dtype=tdt).to(memory_format=torch.channels_last)
            conv = nn.Conv2d(cin, cout, ks, st, padding=ks // 2, bias=False).to(dev, tdt)
            conv = conv.to(memory_format=torch.channels_last)
            ho = (size + 2 * (ks // 2) - ks) // st + 1
            fl = 2.0 * batch * cout * ho * ho * cin * ks * ks
            xg = x.clone().requires_grad_(True)

            def fwd():
                with torch.no_grad():
                    conv(x)

            def fwdbwd():
                conv(xg).sum().backward()

            for phase, fn, mult in (("fwd", fwd, 1.0), ("fwd_bwd", fwdbwd, 3.0)):
                try:
                    t = timer.median_s(fn, reps=5, warmup=3)
                    rows.append(dict(kind="conv", shape_class=f"{ks}x{ks}s{st}", dtype=dt, m=batch,
                                     n=cout, k=cin, time_s=f"{t:.6e}", tflops=f"{mult * fl / t / 1e12:.2f}",
                                     peak_tflops=peaks.get(dt, ""),
                                     note=f"{phase}; input {batch}x{cin}x{size}x{size} NHWC; out {ho}x{ho}; cudnn.benchmark"))
                except Exception as e:  # noqa: BLE001
                    rows.append(dict(kind="conv", shape_class=f"{ks}x{ks}s{st}", dtype=dt, m=batch, n=cout,
                                     k=cin, time_s="", tflops="", peak_tflops=peaks.get(dt, ""),
                                     note=f"{phase} failed: {e}"[:200]))
    set_tf32(False)


def run_attention(dev, timer, smoke, rows, peaks, deadline):
    seqs = [32, 64] if smoke else [512, 1024, 2048, 4096, 8192, 16384]
    dtypes = ["fp32"] if smoke else ["bf16", "fp16"]
    for dt in dtypes:
        tdt = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dt]
        for d in ([16] if smoke else [64, 128]):
            heads = 2 if smoke else (2048 // d)  # model width 2048
            for s in seqs:
                if time.time() > deadline:
                    break
                b = max(1, (1 if smoke else 16384) // s)  # same tokens per call
                for causal in (False, True):
                    q, kk, v = (torch.randn(b, heads, s, d, device=dev, dtype=tdt, requires_grad=True)
                                for _ in range(3))
                    fl = 4.0 * b * heads * s * s * d * (0.5 if causal else 1.0)

                    def fwd():
                        with torch.no_grad():
                            sdpa(q, kk, v, is_causal=causal)

                    def fwdbwd():
                        sdpa(q, kk, v, is_causal=causal).sum().backward()

                    for phase, fn, mult in (("fwd", fwd, 1.0), ("fwd_bwd", fwdbwd, 3.5)):
                        try:
                            t = timer.median_s(fn, reps=5, warmup=2)
                            rows.append(dict(kind="attention", shape_class="causal" if causal else "full",
                                             dtype=dt, m=s, n=d, k=b * heads, time_s=f"{t:.6e}",
                                             tflops=f"{mult * fl / t / 1e12:.2f}", peak_tflops=peaks.get(dt, ""),
                                             note=f"{phase}; batch {b} heads {heads} seq {s} head_dim {d}; "
                                                  f"F.scaled_dot_product_attention; bwd counted as 2.5x fwd FLOPs"))
                        except Exception as e:  # noqa: BLE001
                            rows.append(dict(kind="attention", shape_class="causal" if causal else "full",
                                             dtype=dt, m=s, n=d, k=b * heads, time_s="", tflops="",
                                             peak_tflops=peaks.get(dt, ""), note=f"{phase} failed: {e}"[:200]))


# ---------------------------------------------------------------------------------------------
# models (dimensions of configs/models/*.yaml)

class EncoderLayer(nn.Module):
    """A BERT/GPT block: multi-head attention (SDPA) and a GELU MLP, post- or pre-norm."""

    def __init__(self, hidden, heads, ffn, causal, pre_norm, eps):
        super().__init__()
        self.heads, self.causal, self.pre_norm = heads, causal, pre_norm
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.fc1 = nn.Linear(hidden, ffn)
        self.fc2 = nn.Linear(ffn, hidden)
        self.ln1 = nn.LayerNorm(hidden, eps=eps)
        self.ln2 = nn.LayerNorm(hidden, eps=eps)
        self.drop = nn.Dropout(0.1)

    def attn(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        o = sdpa(q, k, v, dropout_p=0.1 if self.training else 0.0,
                                           is_causal=self.causal)
        return self.drop(self.proj(o.transpose(1, 2).reshape(b, s, h)))

    def mlp(self, x):
        return self.drop(self.fc2(F.gelu(self.fc1(x))))

    def forward(self, x):
        if self.pre_norm:
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.mlp(x))


class TransformerModel(nn.Module):
    def __init__(self, vocab, hidden, layers, heads, ffn, max_pos, type_vocab, head, classes,
                 causal=False, pre_norm=False, eps=1e-12):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(max_pos, hidden)
        self.typ = nn.Embedding(type_vocab, hidden) if type_vocab else None
        self.emb_ln = None if pre_norm else nn.LayerNorm(hidden, eps=eps)
        self.blocks = nn.ModuleList(EncoderLayer(hidden, heads, ffn, causal, pre_norm, eps) for _ in range(layers))
        self.final_ln = nn.LayerNorm(hidden, eps=eps) if pre_norm else None
        self.head = head
        if head == "classifier":
            self.pool = nn.Linear(hidden, hidden)
            self.cls = nn.Linear(hidden, classes)
        elif head == "pretraining":
            self.pool = nn.Linear(hidden, hidden)
            self.nsp = nn.Linear(hidden, 2)
            self.mlm_dense = nn.Linear(hidden, hidden)
            self.mlm_ln = nn.LayerNorm(hidden, eps=eps)
            self.mlm_bias = nn.Parameter(torch.zeros(vocab))
        self.drop = nn.Dropout(0.1)

    def forward(self, ids):
        s = ids.shape[1]
        x = self.tok(ids) + self.pos(torch.arange(s, device=ids.device))
        if self.typ is not None:
            x = x + self.typ(torch.zeros_like(ids))
        if self.emb_ln is not None:
            x = self.emb_ln(x)
        x = self.drop(x)
        for blk in self.blocks:
            x = blk(x)
        if self.final_ln is not None:
            x = self.final_ln(x)
        if self.head == "classifier":
            return (self.cls(torch.tanh(self.pool(x[:, 0]))),)
        if self.head == "pretraining":
            mlm = F.linear(self.mlm_ln(F.gelu(self.mlm_dense(x))), self.tok.weight, self.mlm_bias)
            return mlm, self.nsp(torch.tanh(self.pool(x[:, 0])))
        return (F.linear(x, self.tok.weight),)  # lm head tied to the token table


def transformer(name, seq, smoke):
    dims = {
        "bert_base": dict(vocab=30522, hidden=768, layers=12, heads=12, ffn=3072, max_pos=512, type_vocab=2,
                          head="classifier", classes=2),
        "bert_large": dict(vocab=30522, hidden=1024, layers=24, heads=16, ffn=4096, max_pos=512, type_vocab=2,
                           head="classifier", classes=2),
        "bert_large_pretraining": dict(vocab=30522, hidden=1024, layers=24, heads=16, ffn=4096, max_pos=512,
                                       type_vocab=2, head="pretraining", classes=30522),
        "gpt2": dict(vocab=50257, hidden=768, layers=12, heads=12, ffn=3072, max_pos=1024, type_vocab=0,
                     head="lm", classes=50257, causal=True, pre_norm=True, eps=1e-5),
    }[name]
    if smoke:
        dims.update(vocab=512, hidden=64, layers=2, heads=4, ffn=128, classes=min(dims["classes"], 512))
    return TransformerModel(**dims), dims


def transformer_case(dev, name, batch, seq, smoke):
    """The zoo's Transformer `name` on `dev` in training mode, a batch of token ids and its loss:
    (model, loss_of), loss_of() -> the step's scalar loss (classifier, pre-training or LM head)."""
    model, dims = transformer(name, seq, smoke)
    model = model.to(dev).train()
    ids = torch.randint(0, dims["vocab"], (batch, seq), device=dev)
    if dims["head"] == "classifier":
        y = torch.randint(0, dims["classes"], (batch,), device=dev)
        return model, lambda: F.cross_entropy(model(ids)[0], y)
    if dims["head"] == "pretraining":
        ynsp = torch.randint(0, 2, (batch,), device=dev)

        def pretraining_loss():
            mlm, nsp = model(ids)
            return F.cross_entropy(mlm.flatten(0, 1), ids.flatten()) + F.cross_entropy(nsp, ynsp)
        return model, pretraining_loss

    def lm_loss():
        (logits,) = model(ids)
        return F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())
    return model, lm_loss


def train_case(dev, timer, name, batch, seq, precision, steps, warmup, smoke, autotune=True):
    """One model, one precision: median step time and peak memory of `steps` timed steps."""
    amp_dtype = {"mixed_fp16": torch.float16, "mixed_bf16": torch.bfloat16}.get(precision)
    set_tf32(precision == "tf32")
    torch.backends.cudnn.benchmark = autotune
    if name == "resnet50":
        import torchvision  # noqa: PLC0415 - only the vision case needs it
        model = torchvision.models.resnet50().to(dev).to(memory_format=torch.channels_last)
        size = 32 if smoke else 224
        x = (torch.rand(batch, 3, size, size, device=dev) * 2 - 1).to(memory_format=torch.channels_last)
        y = torch.randint(0, 1000, (batch,), device=dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
        loss_of = lambda: F.cross_entropy(model(x), y)  # noqa: E731
    else:
        model, loss_of = transformer_case(dev, name, batch, seq, smoke)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model.train()
    scaler = grad_scaler(amp_dtype == torch.float16 and dev.type == "cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        with (torch.autocast(dev.type, dtype=amp_dtype) if amp_dtype else contextlib.nullcontext()):
            loss = loss_of()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    t = timer.median_s(step, reps=steps, warmup=warmup)
    peak = torch.cuda.max_memory_allocated(dev) if dev.type == "cuda" else 0
    params = sum(p.numel() for p in model.parameters())
    set_tf32(False)
    return t, peak, params


TRAIN_CASES = [
    # model, batch per GPU, seq (0 = vision), precision
    ("resnet50", 256, 0, "tf32"), ("resnet50", 256, 0, "mixed_fp16"), ("resnet50", 256, 0, "fp32"),
    ("bert_base", 64, 128, "mixed_fp16"), ("bert_base", 64, 128, "tf32"), ("bert_base", 16, 512, "mixed_fp16"),
    ("bert_large", 32, 128, "mixed_fp16"), ("bert_large", 8, 512, "mixed_fp16"),
    ("bert_large_pretraining", 64, 128, "mixed_fp16"),
    ("gpt2", 8, 1024, "mixed_bf16"), ("gpt2", 8, 1024, "tf32"),
]


def run_train(dev, timer, smoke, csv_rows, gpu, source, deadline):
    cases = [("resnet50", 2, 0, "fp32"), ("bert_base", 2, 16, "fp32"), ("gpt2", 2, 16, "fp32"),
             ("bert_large_pretraining", 2, 16, "fp32")] if smoke else TRAIN_CASES
    for name, batch, seq, prec in cases:
        if time.time() > deadline:
            print(f"gpu_measure: time budget spent, skipping {name} b{batch} {prec}", file=sys.stderr)
            continue
        try:
            t, peak, params = train_case(dev, timer, name, batch, seq, prec, steps=3 if smoke else 15,
                                         warmup=1 if smoke else 5, smoke=smoke)
        except Exception as e:  # noqa: BLE001 - an OOM or missing kernel is recorded, the rest runs
            print(f"gpu_measure: {name} b{batch} {prec} failed: {e}", file=sys.stderr)
            if dev.type == "cuda":
                torch.cuda.empty_cache()
            continue
        if dev.type == "cuda":
            torch.cuda.empty_cache()  # the case's tensors died with train_case's frame
        vision = seq == 0
        value = batch / t  # images/s or sequences/s (the reference format's units; tokens/s = x seq_len)
        zoo = name if (vision or seq == 128 or (name == "gpt2" and seq == 1024)) else \
            ("bert_base_seq512" if name == "bert_base" and seq == 512 else name)
        note = (f"{gpu}; PyTorch {torch.__version__} eager, CUDA {torch.version.cuda}, cuDNN "
                f"{torch.backends.cudnn.version()}; median of {15 if not smoke else 3} steps after "
                f"{5 if not smoke else 1} warm-up (CUDA events); step {t * 1e3:.2f} ms; peak allocated "
                f"{peak} B; {params} parameters; synthetic data on the GPU; "
                + ("torchvision resnet50, channels-last, SGD momentum" if vision else
                   "model written from the zoo's dimensions (bench/gpu_measure.py), SDPA attention, AdamW")
                + ("; smoke run: not a measurement" if smoke else ""))
        row = dict(source=source, device=gpu_device_name(gpu), num_devices=1, setup="server_sxm",
                   framework="pytorch-2.x-channels-last" if vision else "pytorch-2.x", model=zoo,
                   dataset=ZOO_DATASET.get(zoo, ""), batch_per_device=batch, precision=prec,
                   data="synthetic", metric="train_throughput", value=f"{value:.1f}",
                   unit="images/s" if vision else "sequences/s", note=note, seq_len="" if vision else seq)
        csv_rows.append(row)
        print(f"gpu_measure: {zoo} b{batch} s{seq} {prec}: {value:.1f} {row['unit']}, {batch * max(seq, 1) / t:.0f} tokens or images/s (step {t * 1e3:.2f} ms, "
              f"peak {peak / 2**30:.1f} GiB)", file=sys.stderr)


def largest_batch(dev, timer, smoke, deadline):
    """Doubling, then bisection, on ResNet-50 fp32 training until one step runs out of memory."""
    if smoke or dev.type != "cuda":
        return None
    ok, bad, b = 0, None, 512
    while time.time() < deadline and (bad is None or bad - ok > max(64, ok // 16)):
        try:
            train_case(dev, timer, "resnet50", b, 0, "fp32", steps=1, warmup=1, smoke=False, autotune=False)
            ok = b
        except torch.cuda.OutOfMemoryError:
            bad = b
        import gc  # noqa: PLC0415 - the failed step's frame holds tensors until collected
        gc.collect()
        torch.cuda.empty_cache()
        b = b * 2 if bad is None else (ok + bad) // 2
    return ok, bad


def gpu_device_name(gpu):
    g = gpu.lower()
    if "h200" in g:
        return "h200"
    if "h100" in g:
        return "h100_pcie" if "pcie" in g else "h100_sxm5"
    if "a100" in g:
        return "a100_sxm4_80gb" if "80" in g else "a100_sxm4_40gb"
    return "".join(c if c.isalnum() else "_" for c in g).strip("_")


ZOO_DATASET = {"resnet50": "imagenet", "bert_base": "glue_sst2", "bert_base_seq512": "glue_sst2",
               "bert_large": "glue_sst2", "bert_large_pretraining": "wikipedia_bookcorpus", "gpt2": "openwebtext"}
REF_COLUMNS = ["source", "device", "num_devices", "setup", "framework", "model", "dataset", "batch_per_device",
               "precision", "data", "metric", "value", "unit", "note", "seq_len"]
KERNEL_COLUMNS = ["kind", "shape_class", "dtype", "m", "n", "k", "time_s", "tflops", "peak_tflops", "note"]


def write_csv(path, columns, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, columns)
        w.writeheader()
        w.writerows(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for train.csv, kernels.csv, env.json")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes on any device; not a measurement")
    ap.add_argument("--budget-s", type=float, default=240, help="wall-clock budget for everything (s)")
    ap.add_argument("--only", default="kernels,train,memory", help="comma list of groups to run")
    ap.add_argument("--peaks", default="", help="datasheet dense peaks, e.g. fp32=66.9,tf32=494.7,bf16=989.4")
    a = ap.parse_args()
    t0 = time.time()
    deadline = t0 + a.budget_s
    os.makedirs(a.out, exist_ok=True)
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if dev.type != "cuda" and not a.smoke:
        print("gpu_measure: no CUDA device (use --smoke to test the script on the CPU)", file=sys.stderr)
        return 3
    torch.manual_seed(0)
    timer = Timer(dev)
    gpu = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    peaks = dict(kv.split("=") for kv in a.peaks.split(",") if "=" in kv)
    env = dict(gpu=gpu, torch=torch.__version__, cuda=torch.version.cuda,
               cudnn=torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
               date=time.strftime("%Y-%m-%d", time.gmtime()), smoke=a.smoke)
    if dev.type == "cuda":
        p = torch.cuda.get_device_properties(dev)
        env.update(sm_count=p.multi_processor_count, memory_bytes=p.total_memory,
                   capability=f"{p.major}.{p.minor}", l2_bytes=getattr(p, "L2_cache_size", None))
    groups = set(a.only.split(","))
    source = f"xpusim bench/gpu_measure.py {env['date']} ({gpu})"
    kernel_rows, train_rows = [], []
    # Most wanted first: GEMMs and the training steps; convolutions last (cudnn.benchmark
    # searches algorithms for every new shape). Each group stops at the deadline.
    if "kernels" in groups:
        run_gemms(dev, timer, a.smoke, kernel_rows, peaks)
        print(f"gpu_measure: gemms done at {time.time() - t0:.0f} s", file=sys.stderr)
        write_csv(os.path.join(a.out, "kernels.csv"), KERNEL_COLUMNS, kernel_rows)
    if "train" in groups:
        run_train(dev, timer, a.smoke, train_rows, gpu, source, t0 + 0.6 * a.budget_s)
        write_csv(os.path.join(a.out, "train.csv"), REF_COLUMNS, train_rows)
    if "kernels" in groups:
        run_attention(dev, timer, a.smoke, kernel_rows, peaks, t0 + 0.75 * a.budget_s)
        print(f"gpu_measure: attention done at {time.time() - t0:.0f} s", file=sys.stderr)
        run_convs(dev, timer, a.smoke, kernel_rows, peaks, deadline - 25)
        print(f"gpu_measure: convs done at {time.time() - t0:.0f} s", file=sys.stderr)
        write_csv(os.path.join(a.out, "kernels.csv"), KERNEL_COLUMNS, kernel_rows)
    if "memory" in groups:
        lb = largest_batch(dev, timer, a.smoke, deadline)
        if lb:
            env["resnet50_fp32_largest_batch"] = dict(fits=lb[0], oom=lb[1])
            print(f"gpu_measure: resnet50 fp32 largest batch that trained {lb[0]}, OOM at {lb[1]}", file=sys.stderr)
    write_csv(os.path.join(a.out, "train.csv"), REF_COLUMNS, train_rows)
    env["wall_s"] = round(time.time() - t0, 1)
    with open(os.path.join(a.out, "env.json"), "w") as f:
        json.dump(env, f, indent=1, sort_keys=True)
    print(f"gpu_measure: done in {env['wall_s']} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
