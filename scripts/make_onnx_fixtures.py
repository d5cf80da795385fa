#!/usr/bin/env python3
"""Exports the ONNX fixtures xpusim's importer is tested on (docs/onnx.md).

  make_onnx_fixtures.py OUT_DIR [NAME ...]      NAME in: tiny_cnn bert_tiny gpt_tiny attn_unfused attn_band resnet50

tiny_cnn, bert_tiny, gpt_tiny and attn_unfused (a one-layer decoder whose attention scales q
before QK^T, so the importer lowers it op by op) and attn_band (the attention pattern with a
mask that is not causal: matched, then lowered op by op) are committed under tests/data/onnx/.

Each NAME.onnx gets a sidecar NAME.json with the torch module's trainable parameter count
(the figure the importer's parameter total must equal) and the input shapes it was exported
with. Weights are random (no download); opset 17.

CNNs are exported in training mode: an eval-mode export folds BatchNormalization into the
convolutions (torch's eval peephole), and xpusim models training, where BN runs. The
Transformers have no BN or dropout and are exported in eval mode with constant folding, so the
Shape/Gather/Concat chains and the causal mask arrive folded or foldable.

Needs Debian's python3-torch and python3-torchvision (/usr/bin/python3 where a pyenv python
lacks them). Exit 77 when torch cannot be imported, so a test calling this reports SKIPPED.
"""
import json
import math
import os
import sys

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:  # the caller (ctest) turns 77 into SKIPPED
    print(f"make_onnx_fixtures: cannot import torch ({e})", file=sys.stderr)
    sys.exit(77)


def trainable_params(m):
    return sum(p.numel() for p in m.parameters() if p.requires_grad)


class TinyCNN(nn.Module):
    """conv-bn-relu, max-pool, a residual block, a gated (sigmoid * tanh) conv pair, average and
    global average pool, fc: the ResNet op set and then some."""

    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.conv3 = nn.Conv2d(8, 16, 1, stride=2, bias=True)
        self.conv4 = nn.Conv2d(8, 16, 1, stride=2, bias=True)
        self.apool = nn.AvgPool2d(2, 2)
        self.fc = nn.Linear(16, classes)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = F.relu(self.bn2(self.conv2(x)) + x)
        x = torch.sigmoid(self.conv3(x)) * torch.tanh(self.conv4(x))
        x = self.apool(x)
        x = F.adaptive_avg_pool2d(x, 1)
        return self.fc(torch.flatten(x, 1))


class Block(nn.Module):
    """Post-LN (BERT) or pre-LN (GPT) Transformer block with manual multi-head attention."""

    def __init__(self, d, heads, ffn, causal, seq, prescale=False, band=False):
        super().__init__()
        self.h, self.dh, self.causal, self.prescale = heads, d // heads, causal, prescale
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, ffn), nn.Linear(ffn, d)
        if causal:
            # band: each position also sees the next one; not causal, so not the fused pattern
            self.register_buffer("mask", torch.tril(torch.ones(seq, seq), diagonal=1 if band else 0).view(1, 1, seq, seq))

    def attn(self, x):
        n, t, d = x.shape
        q = self.q(x).view(n, t, self.h, self.dh).transpose(1, 2)
        k = self.k(x).view(n, t, self.h, self.dh).transpose(1, 2)
        v = self.v(x).view(n, t, self.h, self.dh).transpose(1, 2)
        if self.prescale:  # q scaled before the product: not the fused pattern, lowered op by op
            s = (q * (1.0 / math.sqrt(self.dh))) @ k.transpose(-2, -1)
        else:
            s = (q @ k.transpose(-2, -1)) / math.sqrt(self.dh)
        if self.causal:
            s = s.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        p = torch.softmax(s, dim=-1)
        y = (p @ v).transpose(1, 2).reshape(n, t, d)
        return self.o(y)

    def forward(self, x):
        if self.causal:  # GPT: pre-LN
            x = x + self.attn(self.ln1(x))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
        x = self.ln1(x + self.attn(x))  # BERT: post-LN
        return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))


class TinyTransformer(nn.Module):
    def __init__(self, vocab, seq, d, heads, ffn, layers, causal, tied, prescale=False, band=False):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads, ffn, causal, seq, prescale, band) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=not tied)
        if tied:
            self.head.weight = self.tok.weight
        self.register_buffer("position_ids", torch.arange(seq).view(1, seq))

    def forward(self, ids):
        t = ids.shape[1]
        x = self.tok(ids) + self.pos(self.position_ids[:, :t])
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln_f(x))


def export(model, args, path, names, dynamic, training):
    model.train(training)
    mode = torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL
    torch.onnx.export(model, args, path, opset_version=17, input_names=names, output_names=["logits"],
                      dynamic_axes=dynamic, training=mode, do_constant_folding=not training)


def make(name, out_dir):
    torch.manual_seed(0)
    path = os.path.join(out_dir, name + ".onnx")
    if name == "tiny_cnn":
        m, x, train = TinyCNN(), torch.randn(1, 3, 16, 16), True
        inputs = {"input": [1, 3, 16, 16]}
    elif name == "resnet50":
        import torchvision
        m, x, train = torchvision.models.resnet50(weights=None), torch.randn(1, 3, 224, 224), True
        inputs = {"input": [1, 3, 224, 224]}
    elif name in ("bert_tiny", "gpt_tiny"):
        causal = name == "gpt_tiny"
        seq = 16
        # Untied head: torch's export writes a tied head as a separate, transposed copy of the
        # embedding table, so the file's parameter count could not match the module's.
        m = TinyTransformer(vocab=256, seq=seq, d=64, heads=4, ffn=128, layers=2, causal=causal, tied=False)
        x, train = torch.randint(0, 256, (2, seq)), False
        inputs = {"input": ["batch", seq]}
    elif name in ("attn_unfused", "attn_band"):
        seq = 8
        m = TinyTransformer(vocab=64, seq=seq, d=32, heads=4, ffn=64, layers=1, causal=True, tied=False,
                            prescale=name == "attn_unfused", band=name == "attn_band")
        x, train = torch.randint(0, 64, (2, seq)), False
        inputs = {"input": ["batch", seq]}
    else:
        raise SystemExit(f"make_onnx_fixtures: unknown fixture '{name}'")
    dynamic = {"input": {0: "batch"}, "logits": {0: "batch"}} if not train else None
    with torch.no_grad():
        export(m, (x,), path, ["input"], dynamic, train)
    meta = {"model": name, "trainable_params": trainable_params(m), "inputs": inputs, "opset": 17,
            "training_mode_export": train, "torch": torch.__version__}
    with open(os.path.join(out_dir, name + ".json"), "w") as f:
        json.dump(meta, f, indent=2, sort_keys=True)
        f.write("\n")
    print(f"{path}: {meta['trainable_params']} trainable parameters")


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for name in sys.argv[2:] or ["tiny_cnn", "bert_tiny", "gpt_tiny", "attn_unfused", "attn_band", "resnet50"]:
        make(name, out_dir)


if __name__ == "__main__":
    main()
