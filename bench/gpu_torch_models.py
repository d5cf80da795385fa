#!/usr/bin/env python3
# Measured references on a lent GPU (PyTorch eager, synthetic data on the device), a
# complement to bench/gpu_measure.py: cuBLAS GEMMs per dtype (fp8 through torch._scaled_mm), a
# device-to-device copy, and training steps of torchvision ResNet-50 / VGG16 / Inception v3 and
# Hugging Face BERT / GPT-2 built from their configs. Writes one JSON object per line to argv[1].
# Usage (on the GPU machine): python3 bench/gpu_torch_models.py OUT.jsonl
# Its 2026-11-26 H200 results are validation/measured/h200-2026-11-26b.csv; nothing is fitted on them.
import json, sys, time, os
import torch, torch.nn as nn
out = open(sys.argv[1], "w")
dev = torch.device("cuda")
props = torch.cuda.get_device_properties(0)
def emit(**kw):
    kw.update(gpu=props.name, torch=torch.__version__, cudnn=torch.backends.cudnn.version())
    out.write(json.dumps(kw) + "\n"); out.flush(); print(kw, flush=True)

def timed(fn, warm, steps):
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(steps):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize(); ts.append(a.elapsed_time(b) / 1e3)
    ts.sort(); return ts[len(ts) // 2]

# GEMMs: per dtype, square and skinny shapes (C = A @ B, A MxK, B KxN)
shapes = [(1024,1024,1024),(2048,2048,2048),(4096,4096,4096),(8192,8192,8192),(8192,8192,1024),(4096,1024,4096),(16384,4096,1024),(2048,50257,768),(1000,1000,1000),(3136,64,576)]
for dt_name in ["fp32", "tf32", "fp16", "bf16", "fp8"]:
    for (m, n, k) in shapes:
        try:
            torch.backends.cuda.matmul.allow_tf32 = (dt_name == "tf32")
            if dt_name == "fp8":
                if k % 16 or n % 16: continue
                a = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
                b = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn).t()
                one = torch.tensor(1.0, device=dev)
                fn = lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            else:
                dt = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[dt_name]
                a = torch.randn(m, k, device=dev, dtype=dt); b = torch.randn(k, n, device=dev, dtype=dt)
                fn = lambda: torch.mm(a, b)
            t = timed(fn, 3, 10)
            emit(kind="gemm", dtype=dt_name, m=m, n=n, k=k, time_s=t, tflops=2*m*n*k/t/1e12)
        except Exception as e:
            emit(kind="gemm", dtype=dt_name, m=m, n=n, k=k, error=str(e)[:200])
torch.backends.cuda.matmul.allow_tf32 = False

# Memory bandwidth: device-to-device copy of 2 GiB (bytes read + written)
x = torch.empty(2**29, device=dev); y = torch.empty_like(x)
t = timed(lambda: y.copy_(x), 3, 10)
emit(kind="copy", bytes=2 * x.numel() * 4, time_s=t, gbps=2 * x.numel() * 4 / t / 1e9)
del x, y

def train_step_fn(model, inputs, target, loss_fn, prec, opt):
    scaler = torch.amp.GradScaler("cuda", enabled=(prec == "mixed_fp16"))
    ac = {"mixed_fp16": torch.float16, "mixed_bf16": torch.bfloat16}.get(prec)
    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=ac or torch.float32, enabled=ac is not None):
            out = model(*inputs)
            if not torch.is_tensor(out): out = out.logits
            loss = loss_fn(out, target)
        scaler.scale(loss).backward(); scaler.step(opt); scaler.update()
    return step

import torchvision
torch.backends.cudnn.benchmark = True
for (name, batch, prec, tf32) in [("resnet50", 256, "mixed_fp16", False), ("resnet50", 128, "fp32", False), ("resnet50", 128, "fp32", True), ("vgg16", 128, "mixed_fp16", False), ("inception_v3", 128, "mixed_fp16", False)]:
    try:
        torch.backends.cudnn.allow_tf32 = tf32; torch.backends.cuda.matmul.allow_tf32 = tf32
        size = 299 if name == "inception_v3" else 224
        kw = {"aux_logits": False, "init_weights": False} if name == "inception_v3" else {}
        m = getattr(torchvision.models, name)(**kw).to(dev).to(memory_format=torch.channels_last)
        xin = torch.randn(batch, 3, size, size, device=dev).to(memory_format=torch.channels_last)
        tgt = torch.randint(0, 1000, (batch,), device=dev)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        t = timed(train_step_fn(m, (xin,), tgt, nn.CrossEntropyLoss(), prec, opt), 5, 15)
        emit(kind="train", model=name, batch=batch, precision=prec, tf32=tf32, step_time_s=t, throughput_per_s=batch / t)
        del m, opt, xin
    except Exception as e:
        emit(kind="train", model=name, batch=batch, precision=prec, error=str(e)[:200])
    torch.cuda.empty_cache()
torch.backends.cudnn.allow_tf32 = False; torch.backends.cuda.matmul.allow_tf32 = False

try:
    import transformers
    from transformers import BertConfig, BertForSequenceClassification, GPT2Config, GPT2LMHeadModel
    for (name, cfg, seq, batch, prec) in [
        ("bert_base", BertConfig(num_labels=2), 128, 64, "mixed_fp16"),
        ("bert_large", BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096, num_labels=2), 128, 64, "mixed_fp16"),
        ("bert_large", BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096, num_labels=2), 128, 32, "fp32")]:
        m = BertForSequenceClassification(cfg).to(dev)
        ids = torch.randint(0, cfg.vocab_size, (batch, seq), device=dev)
        tgt = torch.randint(0, 2, (batch,), device=dev)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-5, fused=True)
        t = timed(train_step_fn(m, (ids,), tgt, nn.CrossEntropyLoss(), prec, opt), 5, 15)
        emit(kind="train", model=name, seq_len=seq, batch=batch, precision=prec, step_time_s=t, throughput_per_s=batch / t)
        del m, opt; torch.cuda.empty_cache()
    cfg = GPT2Config(n_positions=1024)
    m = GPT2LMHeadModel(cfg).to(dev)
    batch, seq = 16, 1024
    ids = torch.randint(0, cfg.vocab_size, (batch, seq), device=dev)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-5, fused=True)
    lf = lambda out, tgt: nn.functional.cross_entropy(out.view(-1, out.size(-1)), tgt.view(-1))
    t = timed(train_step_fn(m, (ids,), ids, lf, "mixed_bf16", opt), 5, 15)
    emit(kind="train", model="gpt2", seq_len=seq, batch=batch, precision="mixed_bf16", step_time_s=t, throughput_per_s=batch * seq / t, unit="tokens")
except Exception as e:
    emit(kind="train", model="transformers", error=str(e)[:300])
