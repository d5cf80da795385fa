#!/usr/bin/env python3
"""The ONNX import corpus (issue 35; docs/onnx.md, "Corpus"): exports every classification
and segmentation model torchvision ships, nn.TransformerEncoder / nn.Transformer and BERT- and
GPT-style modules, imports each with xpusim and checks it.

  onnx_corpus.py export OUT_DIR [NAME ...]     export (cached: skipped when NAME.json has this
                                               script's EXPORT_VERSION) and write NAME.json
  onnx_corpus.py check XPUSIM OUT_DIR [--set default|large|all] [--min-pass PCT] [NAME ...]
                                               export what is missing, then check each model
  onnx_corpus.py list [--set default|large|all]  the model names

Exports are cached under OUT_DIR/torch-VERSION_torchvision-VERSION/ (another torch or
torchvision exports afresh beside them). The "default" set (ctest -L onnx) is one or two
models of every family, chosen so that a cold run (exports included) fits ctest's budget;
"large" (ctest -L corpus_large) is every other model; together they are the whole corpus.

Per model the check asserts: the import succeeds; the parameter count equals the torch
module's trainable parameters exactly; the forward FLOPs of the products (below) are within
1% of the torch count; `predict` runs on an analytical GPU (v100_sxm2_16gb) and on the
SystemC TPU engine (tpu_v2, cloud_tpu_v2-8).

FLOPs compared ("product FLOPs", the same definition on both sides): 2 x multiply-adds of
every convolution, dense layer and batched matrix product of the forward pass at batch 1,
plus one add per output element where a convolution or dense layer has a bias. torch side:
a TorchDispatchMode over the aten ops the module runs (convolution, mm, addmm, bmm, baddbmm,
matmul's decompositions, and the fused attention of nn.MultiheadAttention, which runs as
those); xpusim side: the forward ops of kind conv2d and matmul of `graph --format json`, and
of attention its two products (flops minus the 5 per score the softmax takes). Elementwise
ops, normalisation and pooling are outside the comparison: the two sides price them
differently by design (xpusim counts, e.g., a BatchNorm's statistics).

Export: opset 17, a dynamic batch axis, example batch 2 (torch's training-mode BatchNorm needs two samples after a global
pool), small inputs (64x64 unless a model needs more), random weights; training mode (no
BatchNorm folding), eval mode only for models with stochastic depth (torchvision's
StochasticDepth is not exportable in training mode), exported with TrainingMode.PRESERVE so
the exporter does not fold their BatchNorms either (their BatchNormalization nodes are in
inference mode, which the importer notes).
Segmentation models return a dict: the corpus exports its "out" logits [N, C, H, W]
flattened to per-pixel logits [N, H*W, C] so xpusim can attach a per-position loss.

Exit 77 (ctest SKIPPED) when torch or torchvision cannot be imported. Exit 1 when fewer than
--min-pass percent of the torchvision models pass, or when a Transformer module fails. The
report ends with every failing model and its reason (the operator or limit the importer names,
or the export error), and is also written to OUT_DIR/corpus_results_SET.json.
"""
import json
import math
import os
import subprocess
import sys
import time
import warnings

warnings.filterwarnings("ignore")  # the exporter's per-BatchNorm UserWarnings drown the report

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import torchvision
    from torch.utils._python_dispatch import TorchDispatchMode
except ImportError as e:  # the caller (ctest) turns 77 into SKIPPED
    print(f"onnx_corpus: cannot import torch/torchvision ({e})", file=sys.stderr)
    sys.exit(77)

TV = torchvision.models
SEG = torchvision.models.segmentation

# name -> (constructor, input side, mode). Mode "train" unless the model has stochastic depth.
STOCHASTIC_DEPTH = ("efficientnet", "convnext", "swin", "maxvit")
# ctest -L onnx: one or two models of every family (every operator and pattern the corpus
# needs), cheap to export; everything else is the large set (ctest -L corpus_large).
DEFAULT = {"alexnet", "resnet18", "resnet50", "resnext50_32x4d", "densenet121", "googlenet", "squeezenet1_1",
           "shufflenet_v2_x0_5", "mobilenet_v2", "mobilenet_v3_small", "mnasnet0_5", "efficientnet_b0",
           "efficientnet_v2_s", "regnet_x_400mf", "regnet_y_400mf", "convnext_tiny", "vit_b_32", "swin_t",
           "maxvit_t", "fcn_resnet50", "lraspp_mobilenet_v3_large", "transformer_encoder", "transformer",
           "bert_style", "gpt_style"}
SIZE = {"vit_h_14": 56, "vgg11": 224, "vgg11_bn": 224, "vgg13": 224, "vgg13_bn": 224, "vgg16": 224, "vgg16_bn": 224, "vgg19": 224,
        "vgg19_bn": 224, "inception_v3": 299, "googlenet": 256, "maxvit_t": 224, "swin_t": 224, "swin_s": 224, "swin_b": 224,
        "swin_v2_t": 256, "swin_v2_s": 256, "swin_v2_b": 256, "alexnet": 224, "squeezenet1_0": 96,
        "squeezenet1_1": 96}


# Exports are cached in OUT_DIR; a change to how a model is built or exported bumps this.
EXPORT_VERSION = 3
EXPORT_INPUT = {n: [3, v, v] for n, v in SIZE.items()}


def classification_names():
    if hasattr(TV, "list_models"):
        return sorted(TV.list_models(module=TV))
    return sorted(n for n in dir(TV) if n[0].islower() and callable(getattr(TV, n)) and n not in ("get_weight",))


SEGMENTATION = ["fcn_resnet50", "fcn_resnet101", "deeplabv3_resnet50", "deeplabv3_resnet101",
                "deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large"]
TRANSFORMERS = ["transformer_encoder", "transformer", "bert_style", "gpt_style"]


def all_names():
    return classification_names() + SEGMENTATION + TRANSFORMERS


def selected(which):
    names = all_names()
    if which == "default":
        return [n for n in names if n in DEFAULT]
    if which == "large":
        return [n for n in names if n not in DEFAULT]
    if which == "all":
        return names
    raise SystemExit(f"onnx_corpus: --set must be default, large or all, not {which!r}")


def cache_dir(out_dir):
    """Exports are cached per torch / torchvision version: another version exports afresh."""
    return os.path.join(out_dir, f"torch-{torch.__version__}_torchvision-{torchvision.__version__}")


class PerPixel(nn.Module):
    """A segmentation model's "out" logits [N, C, H, W] as per-position logits [N, H*W, C]."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"].flatten(2).transpose(1, 2)


class EncoderClassifier(nn.Module):
    """nn.TransformerEncoder over float features [N, T, F] and a per-position head."""

    def __init__(self, d=64, heads=4, layers=2, classes=10):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=128, dropout=0.1, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        return self.head(self.enc(x))


class Seq2Seq(nn.Module):
    """nn.Transformer (encoder and decoder) on float features, one input: source = target."""

    def __init__(self, d=64, heads=4, classes=10):
        super().__init__()
        self.t = nn.Transformer(d, heads, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=128,
                                dropout=0.1, batch_first=True)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        return self.head(self.t(x, x))


class Block(nn.Module):
    """A BERT (post-LN) or GPT (pre-LN, causal) block with hand-written multi-head attention."""

    def __init__(self, d, heads, causal, seq):
        super().__init__()
        self.h, self.dh, self.causal = heads, d // heads, causal
        self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.drop = nn.Dropout(0.1)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def attn(self, x):
        n, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (z.view(n, t, self.h, self.dh).transpose(1, 2) for z in (q, k, v))
        s = (q @ k.transpose(-2, -1)) / math.sqrt(self.dh)
        if self.causal:
            s = s.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        y = (self.drop(torch.softmax(s, dim=-1)) @ v).transpose(1, 2).reshape(n, t, d)
        return self.o(y)

    def forward(self, x):
        if self.causal:
            x = x + self.drop(self.attn(self.ln1(x)))
            return x + self.drop(self.fc2(F.gelu(self.fc1(self.ln2(x)))))
        x = self.ln1(x + self.drop(self.attn(x)))
        return self.ln2(x + self.drop(self.fc2(F.gelu(self.fc1(x)))))


class LM(nn.Module):
    def __init__(self, causal, vocab=512, seq=32, d=64, heads=4, layers=2):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads, causal, seq) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)
        self.register_buffer("position_ids", torch.arange(seq).view(1, seq))

    def forward(self, ids):
        x = self.tok(ids) + self.pos(self.position_ids[:, :ids.shape[1]])
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


def build(name):
    """(module, example input, training mode, input shape for the sidecar)."""
    if name == "transformer_encoder":
        return EncoderClassifier(), torch.randn(2, 16, 64), True
    if name == "transformer":
        return Seq2Seq(), torch.randn(2, 16, 64), True
    if name in ("bert_style", "gpt_style"):
        return LM(causal=name == "gpt_style"), torch.randint(0, 512, (2, 32)), True
    if name in SEGMENTATION:
        m = PerPixel(getattr(SEG, name)(weights=None, weights_backbone=None))
        return m, torch.randn(2, 3, 64, 64), True
    kw = {"weights": None}
    if name.startswith("vit_"):
        kw["image_size"] = 64 if name != "vit_h_14" else 56
    if name in ("inception_v3", "googlenet"):
        # Without the auxiliary classifiers: they feed only auxiliary losses, and the importer
        # trains on the export's first output, so their parameters would be dead nodes.
        kw["init_weights"] = False
        kw["aux_logits"] = False
    m = getattr(TV, name)(**kw)
    side = SIZE.get(name, 64)
    train = not name.startswith(STOCHASTIC_DEPTH)
    return m, torch.randn(2, 3, side, side), train


def trainable_params(m):
    return sum(p.numel() for p in m.parameters() if p.requires_grad)


class ProductFlops(TorchDispatchMode):
    """2 x MACs of every convolution and matrix product the module runs, + bias adds: those
    inside convolution/addmm/baddbmm, and the separate add of a bias parameter after a
    product on a 3-D input (how F.linear runs there)."""

    def __init__(self, bias_ids):
        super().__init__()
        self.flops = 0
        self.bias_ids = bias_ids

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        numel = lambda t: t.numel()
        if name == "convolution":
            x, w, b = args[0], args[1], args[2]
            self.flops += 2 * numel(out) * numel(w) // w.shape[0] + (numel(out) if b is not None else 0)
        elif name in ("mm", "bmm"):
            self.flops += 2 * numel(out) * args[0].shape[-1]
        elif name in ("addmm", "baddbmm"):
            self.flops += 2 * numel(out) * args[1].shape[-1] + numel(out)
        elif name in ("add", "add_") and any(id(a) in self.bias_ids for a in args[:2]):
            self.flops += numel(out)
        return out


def count_flops(m, x, train):
    m.train(train)
    bias_ids = {id(p) for n, p in m.named_parameters() if n.endswith("bias") and p.dim() == 1}
    mode = ProductFlops(bias_ids)
    with torch.no_grad(), mode:
        m(x)
    return mode.flops


def export(name, out_dir):
    path = os.path.join(out_dir, name + ".onnx")
    meta_path = os.path.join(out_dir, name + ".json")
    if os.path.exists(path) and os.path.exists(meta_path):
        meta = json.load(open(meta_path))
        if (meta.get("export_version") == EXPORT_VERSION and meta.get("input") == EXPORT_INPUT.get(name, meta["input"])
                and meta.get("torch") == torch.__version__ and meta.get("torchvision") == torchvision.__version__):
            return meta
    torch.manual_seed(0)
    m, x, train = build(name)
    t0 = time.time()
    flops = count_flops(m, x, train) / x.shape[0]  # per sample
    meta = {"model": name, "export_version": EXPORT_VERSION, "trainable_params": trainable_params(m), "product_flops_per_sample": flops,
            "input": list(x.shape[1:]), "dtype": "int64" if x.dtype == torch.int64 else "float32",
            "training_mode_export": train, "torch": torch.__version__, "torchvision": torchvision.__version__}
    m.train(train)
    # PRESERVE with the module in eval mode, not EVAL: EVAL runs torch's peephole pass that
    # folds each BatchNorm into the convolution before it (parameters would not match).
    mode = torch.onnx.TrainingMode.TRAINING if train else torch.onnx.TrainingMode.PRESERVE
    try:
        with torch.no_grad():
            torch.onnx.export(m, (x,), path, opset_version=17, input_names=["input"], output_names=["logits"],
                              training=mode, do_constant_folding=False,
                              dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
        meta["export_error"] = None
    except Exception as e:  # an export torch cannot do is a corpus failure, named
        meta["export_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    meta["export_s"] = round(time.time() - t0, 1)
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=2, sort_keys=True)
        f.write("\n")
    return meta


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""


def product_flops(graph):
    total = 0.0
    for op in graph["ops"]:
        if op["kind"] in ("conv2d", "matmul"):
            total += op["flops"]
        elif op["kind"] == "attention":
            total += op["flops"] - 5 * op["transcendentals"]
    return total


def check(xpusim, name, out_dir, meta):
    """(status, detail): status ok | fail."""
    if meta.get("export_error"):
        return "fail", "torch export: " + meta["export_error"]
    path = os.path.join(out_dir, name + ".onnx")
    rc, out, err = run([xpusim, "graph", "--model", path, "--batch", "1", "--format", "json"])
    if rc != 0:
        return "fail", "import: " + err
    g = json.loads(out)
    want_p, got_p = meta["trainable_params"], g["params"]
    want_f, got_f = meta["product_flops_per_sample"], product_flops(g)
    problems = []
    if got_p != want_p:
        problems.append(f"params {got_p} != torch {want_p} ({got_p - want_p:+d})")
    if abs(got_f - want_f) > 0.01 * want_f:
        problems.append(f"product FLOPs {got_f:.4g} vs torch {want_f:.4g} ({100 * (got_f / want_f - 1):+.2f}%)")
    for dev in (["--device", "v100_sxm2_16gb", "--batch", "2"],
                ["--device", "tpu_v2", "--count", "8", "--system", "cloud_tpu_v2-8", "--batch", "8"]):
        rc, _, err = run([xpusim, "predict", "--model", path, *dev, "--format", "json"])
        if rc != 0:
            problems.append(f"predict {dev[1]}: {err}")
    detail = f"params {got_p}, product GFLOPs {got_f / 1e9:.4f} (torch {want_f / 1e9:.4f})"
    return ("fail", "; ".join(problems)) if problems else ("ok", detail)


def main():
    args = sys.argv[1:]
    if not args or args[0] not in ("export", "check", "list"):
        raise SystemExit(__doc__)
    which, min_pass, names, rest = "all", 95.0, [], []
    i = 1
    while i < len(args):
        if args[i] == "--set":
            which, i = args[i + 1], i + 2
        elif args[i] == "--min-pass":
            min_pass, i = float(args[i + 1]), i + 2
        else:
            rest.append(args[i])
            i += 1
    if args[0] == "list":
        print("\n".join(selected(which)))
        return
    if args[0] == "export":
        out_dir, names = cache_dir(rest[0]), rest[1:] or selected(which)
        os.makedirs(out_dir, exist_ok=True)
        for n in names:
            meta = export(n, out_dir)
            print(f"{n}: {meta['trainable_params']} params, export {meta.get('export_s')} s"
                  + (f", ERROR {meta['export_error']}" if meta.get("export_error") else ""), flush=True)
        return
    xpusim, report_dir, names = rest[0], rest[1], rest[2:] or selected(which)
    out_dir = cache_dir(report_dir)
    os.makedirs(out_dir, exist_ok=True)
    results = {}
    for n in names:
        t0 = time.time()
        try:
            meta = export(n, out_dir)
        except Exception as e:
            results[n] = ("fail", f"build/export: {type(e).__name__}: {e}")
            print(f"FAIL {n}: {results[n][1]}", flush=True)
            continue
        results[n] = check(xpusim, n, out_dir, meta)
        print(f"{'ok  ' if results[n][0] == 'ok' else 'FAIL'} {n}: {results[n][1]} [{time.time() - t0:.1f} s]", flush=True)
    vision = [n for n in names if n not in TRANSFORMERS]
    passed = [n for n in vision if results[n][0] == "ok"]
    pct = 100.0 * len(passed) / len(vision) if vision else 100.0
    print(f"torchvision models: {len(passed)}/{len(vision)} pass ({pct:.1f}%)")
    bad_tf = [n for n in names if n in TRANSFORMERS and results[n][0] != "ok"]
    if bad_tf:
        print("Transformer modules failing: " + ", ".join(bad_tf))
    failing = [n for n in names if results[n][0] != "ok"]
    print(f"failing ({len(failing)}):" + ("" if failing else " none"))
    for n in failing:
        print(f"  {n}: {results[n][1]}")
    with open(os.path.join(report_dir, f"corpus_results_{which}.json"), "w") as f:
        json.dump({n: {"status": s, "detail": d} for n, (s, d) in results.items()}, f, indent=2, sort_keys=True)
        f.write("\n")
    sys.exit(0 if pct >= min_pass and not bad_tf else 1)


if __name__ == "__main__":
    main()
