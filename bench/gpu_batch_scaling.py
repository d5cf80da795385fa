#!/usr/bin/env python3
"""Batch scaling of eager Transformer training on a lent GPU: where a step's time goes.

For each (model, batch): the median training step (CUDA events, unprofiled), then three
profiled steps (torch.profiler) for the kernels the step launches: their count, their summed
duration by kind (GEMM, attention, element-wise, normalisation, loss, optimizer, copies) and
the share of the unprofiled step they fill. A share near 100 % says the GPU never waits on the
host (launch costs hidden behind running kernels); a share that falls as the batch shrinks
says the host's per-kernel dispatch bounds the step. This tells apart the two readings of the
analytical model's per-kernel launch cost (serial with the kernels, or overlapped) that
validation/measured/README.md leaves open for GPT-2.

Models: the zoo's GPT-2 small and BERT-base written from their dimensions (bench/gpu_measure.py)
and, when `transformers` is importable, Hugging Face GPT2LMHeadModel from its default config.
Writes OUT/scaling.csv (reference format, tests/data/reference/README.md) and OUT/kernels.jsonl
(one object per case: kernels per step, time by kind). Nothing here is fitted on.
Usage: python3 bench/gpu_batch_scaling.py OUT [--budget-s 150] [--smoke]
"""
import argparse
import contextlib
import json
import os
import re
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_measure as gm  # noqa: E402 - the zoo's models and the timer live there

KINDS = [  # first match wins; names of cuBLAS/CUTLASS/cuDNN/PyTorch kernels
    ("attention", r"flash|fmha|attention|sdpa|efficient_attention"),
    ("gemm", r"gemm|cutlass|xmma|nvjet|cublas|sm90_|sm80_|matmul"),
    ("optimizer", r"adam|multi_tensor|foreach|fused_adam"),
    ("loss", r"softmax|cross_entropy|nll_loss|log_softmax"),
    ("norm", r"layer_norm|layernorm|LayerNorm"),
    ("copy", r"memcpy|memset|copy|cat_|index|gather|scatter|embedding"),
    ("elementwise", r"elementwise|vectorized|unrolled|reduce|gelu|dropout|fill|where|tanh|pow|mul|add"),
]


def kind_of(name):
    for k, pat in KINDS:
        if re.search(pat, name, re.IGNORECASE):
            return k
    return "other"


def hf_gpt2(smoke):
    from transformers import GPT2Config, GPT2LMHeadModel  # noqa: PLC0415 - optional
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=512) if smoke else GPT2Config()
    return GPT2LMHeadModel(cfg), cfg.vocab_size


def make_step(dev, name, batch, seq, smoke):
    if name == "gpt2_hf":
        model, vocab = hf_gpt2(smoke)
        model = model.to(dev).train()
        ids = torch.randint(0, vocab, (batch, seq), device=dev)
        loss_of = lambda: model(input_ids=ids, labels=ids).loss  # noqa: E731
    else:
        model, loss_of = gm.transformer_case(dev, name, batch, seq, smoke)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16) if dev.type == "cuda" else contextlib.nullcontext()

    def step():
        opt.zero_grad(set_to_none=True)
        with amp:
            loss = loss_of()
        loss.backward()
        opt.step()
    return step


def profile_kernels(step, steps):
    """Kernels of `steps` profiled steps: count and duration (s) per kind, per step."""
    from torch.profiler import ProfilerActivity, profile  # noqa: PLC0415
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    with profile(activities=acts) as prof:
        for _ in range(steps):
            step()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    by_kind, count = {}, 0
    for e in prof.events():
        if getattr(e, "device_type", None) != torch.autograd.DeviceType.CUDA:
            continue
        dur = e.time_range.elapsed_us() * 1e-6
        k = kind_of(e.name)
        by_kind[k] = by_kind.get(k, 0.0) + dur / steps
        count += 1
    return count / steps, by_kind


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--budget-s", type=float, default=150)
    ap.add_argument("--smoke", action="store_true", help="tiny sizes on any device; not a measurement")
    a = ap.parse_args()
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if dev.type != "cuda" and not a.smoke:
        print("gpu_batch_scaling: no CUDA device (use --smoke to test the script on the CPU)", file=sys.stderr)
        return 3
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(0)
    t0 = time.time()
    timer = gm.Timer(dev)
    gpu = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    date = time.strftime("%Y-%m-%d", time.gmtime())
    seq_gpt, seq_bert = (16, 16) if a.smoke else (1024, 128)
    cases = [("gpt2", b, seq_gpt) for b in (2, 4, 8, 16, 32)] + \
            [("gpt2_hf", b, seq_gpt) for b in (4, 8, 16)] + \
            [("bert_base", b, seq_bert) for b in (16, 32, 64, 128)]
    if a.smoke:
        cases = [("gpt2", 2, 16), ("bert_base", 2, 16)]
    rows, jl = [], open(os.path.join(a.out, "kernels.jsonl"), "w")
    for name, batch, seq in cases:
        if time.time() - t0 > a.budget_s:
            print(f"gpu_batch_scaling: budget spent, skipping {name} b{batch}", file=sys.stderr)
            continue
        try:
            step = make_step(dev, name, batch, seq, a.smoke)
            t = timer.median_s(step, reps=3 if a.smoke else 10, warmup=1 if a.smoke else 4)
            kernels, by_kind = profile_kernels(step, 1 if a.smoke else 3)
        except Exception as e:  # noqa: BLE001 - an OOM or a missing package skips the case
            print(f"gpu_batch_scaling: {name} b{batch} failed: {e}", file=sys.stderr)
            if dev.type == "cuda":
                torch.cuda.empty_cache()
            continue
        busy = sum(by_kind.values())
        rec = dict(gpu=gpu, torch=torch.__version__, model=name, batch=batch, seq=seq, precision="mixed_bf16",
                   step_s=t, kernels_per_step=kernels, kernel_s_per_step=busy,
                   busy_pct=100 * busy / t if t > 0 else 0, kernel_s_by_kind=by_kind, smoke=a.smoke)
        jl.write(json.dumps(rec, sort_keys=True) + "\n")
        jl.flush()
        print(f"gpu_batch_scaling: {name} b{batch}: step {t * 1e3:.2f} ms, {kernels:.0f} kernels, "
              f"kernels {busy * 1e3:.2f} ms ({rec['busy_pct']:.1f} %), "
              + ", ".join(f"{k} {v * 1e3:.2f}" for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])),
              file=sys.stderr)
        hf = name == "gpt2_hf"
        note = (f"{gpu}; PyTorch {torch.__version__} eager, bf16 autocast, AdamW; median of 10 steps after "
                f"4 warm-up (CUDA events); step {t * 1e3:.2f} ms; {kernels:.0f} kernels per step filling "
                f"{rec['busy_pct']:.1f} % of it (torch.profiler, 3 steps); "
                + ("Hugging Face GPT2LMHeadModel from its default config" if hf else
                   "model written from the zoo's dimensions (bench/gpu_measure.py), SDPA attention")
                + ("; smoke run: not a measurement" if a.smoke else ""))
        zoo = "gpt2" if hf else name
        rows.append(dict(source=f"xpusim bench/gpu_batch_scaling.py {date} ({gpu})",
                         device=gm.gpu_device_name(gpu), num_devices=1, setup="server_sxm",
                         framework="pytorch-2.x", model=zoo, dataset=gm.ZOO_DATASET.get(zoo, ""),
                         batch_per_device=batch, precision="mixed_bf16", data="synthetic",
                         metric="train_throughput", value=f"{batch / t:.2f}", unit="sequences/s",
                         note=note, seq_len=seq))
        del step
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    jl.close()
    gm.write_csv(os.path.join(a.out, "scaling.csv"), gm.REF_COLUMNS, rows)
    print(f"gpu_batch_scaling: {len(rows)} cases in {time.time() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
