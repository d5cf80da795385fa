#!/usr/bin/env python3
"""`xpusim graph --chakra DIR` (issue 36): ResNet-50's training step over 8 data-parallel ranks
as Chakra execution traces, read back by a hand-written protobuf decoder (field numbers of
et_def.proto) and, where python3-protobuf and protoc are installed, by protobuf itself from
tests/cli/chakra_et_subset.proto. Checked against `xpusim graph --format json` of the same
step: node count and names, one all-reduce per weight whose sizes sum to the fp32 gradient
bytes (4 x params), dependencies that point backwards, and analytical durations with --device
that add up to the ops' time in `predict`.
Usage: chakra_check.py XPUSIM OUTDIR
"""
import glob
import json
import os
import shutil
import subprocess
import sys

BIN, OUT = sys.argv[1], sys.argv[2]
HERE = os.path.dirname(os.path.abspath(__file__))


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(args, ok=True):
    p = subprocess.run([BIN] + args, capture_output=True, text=True, timeout=600)
    if ok and p.returncode != 0:
        fail(f"{' '.join(args)}: exit {p.returncode}\n{p.stderr}")
    return p


# --- a protobuf wire decoder, enough for the ET messages --------------------------------
def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if not c & 0x80:
            return v, i
        shift += 7


def fields(b):
    """(number, wire type, value) of each field of one message."""
    i, out = 0, []
    while i < len(b):
        tag, i = varint(b, i)
        num, wt = tag >> 3, tag & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            fail(f"wire type {wt}")
        out.append((num, wt, v))
    return out


def messages(b):
    i, out = 0, []
    while i < len(b):
        n, i = varint(b, i)
        out.append(b[i:i + n])
        i += n
    if i != len(b):
        fail("stream ends inside a message")
    return out


def decode_node(m):
    node = {"deps": [], "attrs": {}, "duration": 0}
    for num, wt, v in fields(m):
        if num == 1:
            node["id"] = v
        elif num == 2:
            node["name"] = v.decode()
        elif num == 3:
            node["type"] = v
        elif num == 5:
            j = 0
            while j < len(v):
                d, j = varint(v, j)
                node["deps"].append(d)
        elif num == 7:
            node["duration"] = v
        elif num == 10:
            name, val = None, None
            for an, awt, av in fields(v):
                if an == 1:
                    name = av.decode()
                elif an in (9, 13, 27):
                    val = av
                elif an == 29:
                    val = av.decode()
            node["attrs"][name] = val
    return node


def decode_file(path):
    data = open(path, "rb").read()
    msgs = messages(data)
    meta = dict((n, v) for n, _, v in fields(msgs[0]))
    if meta.get(1) != b"0.0.4":
        fail(f"{path}: GlobalMetadata version {meta.get(1)!r}")
    return data, [decode_node(m) for m in msgs[1:]]


def with_protobuf(path, hand):
    """The same file through protobuf's own parser, compiled from the subset schema."""
    protoc = shutil.which("protoc")
    try:
        import google.protobuf  # noqa: F401
        from google.protobuf.internal.decoder import _DecodeVarint32
    except ImportError:
        print("python3-protobuf not installed: protobuf cross-check skipped")
        return
    if not protoc:
        print("protoc not installed: protobuf cross-check skipped")
        return
    gen = os.path.join(OUT, "pb")
    os.makedirs(gen, exist_ok=True)
    subprocess.run([protoc, f"--proto_path={HERE}", f"--python_out={gen}", "chakra_et_subset.proto"], check=True)
    sys.path.insert(0, gen)
    import chakra_et_subset_pb2 as pb
    data = open(path, "rb").read()
    pos, msgs = 0, []
    while pos < len(data):
        n, pos = _DecodeVarint32(data, pos)
        msgs.append(data[pos:pos + n])
        pos += n
    meta = pb.GlobalMetadata()
    meta.ParseFromString(msgs[0])
    if meta.version != "0.0.4":
        fail("protobuf: metadata version")
    if len(msgs) - 1 != len(hand):
        fail("protobuf: node count differs")
    for m, h in zip(msgs[1:], hand):
        n = pb.Node()
        n.ParseFromString(m)
        if n.id != h["id"] or n.name != h["name"] or n.type != h["type"] or list(n.data_deps) != h["deps"]:
            fail(f"protobuf reads node {h['name']} differently: {n}")
        if n.duration_micros != h["duration"]:
            fail(f"protobuf: duration of {h['name']}")
        attrs = {a.name: getattr(a, a.WhichOneof("value")) for a in n.attr}
        for k, v in h["attrs"].items():
            if attrs[k] != v:
                fail(f"protobuf: attribute {k} of {h['name']}: {attrs[k]} != {v}")
        if n.type == pb.COMM_COLL_NODE and (n.attr[1].WhichOneof("value") != "int64_val"
                                            or n.attr[2].WhichOneof("value") != "uint64_val"):
            fail("protobuf: comm_type must be int64, comm_size uint64 (as ASTRA-sim reads them)")
    print(f"protobuf {google.protobuf.__version__} reads {len(msgs) - 1} nodes the same")


# --- the checks -----------------------------------------------------------------------------
shutil.rmtree(OUT, ignore_errors=True)
os.makedirs(OUT)
common = ["--model", "resnet50", "--batch", "32", "--count", "8", "--train"]
graph = json.loads(run(["graph"] + common + ["--format", "json"]).stdout)
ops = graph["ops"]
plain = os.path.join(OUT, "plain")
p = run(["graph"] + common + ["--format", "json", "--chakra", plain])
if json.loads(p.stdout) != graph:
    fail("--chakra changed the graph command's own output")
if "chakra: wrote 8 execution traces" not in p.stderr:
    fail(f"stderr: {p.stderr}")
files = sorted(glob.glob(os.path.join(plain, "*.et")))
if [os.path.basename(f) for f in files] != [f"resnet50.{r}.et" for r in range(8)]:
    fail(f"files: {files}")
data0, nodes = decode_file(files[0])
for f in files[1:]:
    if open(f, "rb").read() != data0:
        fail(f"{f} differs from rank 0 (data-parallel ranks run the same graph)")

if len(nodes) != len(ops):
    fail(f"{len(nodes)} nodes, graph has {len(ops)} ops")
names = [o["name"] for o in ops]
if [n["name"] for n in nodes] != names:
    fail("node names are not the graph's ops in order")
types = {}
for k, n in enumerate(nodes):
    if n["id"] != k:
        fail(f"node {k} has id {n['id']}")
    types[n["type"]] = types.get(n["type"], 0) + 1
    if any(d >= n["id"] for d in n["deps"]):
        fail(f"{n['name']}: a dependency on a later node {n['deps']}")
    if n["type"] != 2 and not n["deps"]:
        fail(f"{n['name']}: no dependency (only the input batch starts the step)")
    if n["attrs"].get("op_kind") != ops[k]["kind"]:
        fail(f"{n['name']}: op_kind {n['attrs'].get('op_kind')} != {ops[k]['kind']}")
    if n["type"] == 4 and n["attrs"]["num_ops"] != round(ops[k]["flops"]):
        fail(f"{n['name']}: num_ops {n['attrs']['num_ops']} != {ops[k]['flops']}")
    if n["duration"]:
        fail(f"{n['name']}: a duration without --device")
colls = [n for n in nodes if n["type"] == 7]
weights = sum(1 for o in ops if o["kind"] in ("sgd_momentum_update", "adam_update"))
if types.get(2) != 1 or len(colls) != weights or weights < 100:
    fail(f"node types {types}, {weights} updates")
if any(n["attrs"]["comm_type"] != 0 for n in colls):
    fail("an all-reduce with comm_type != ALL_REDUCE")
grad_bytes = sum(n["attrs"]["comm_size"] for n in colls)
if grad_bytes != 4 * graph["params"]:
    fail(f"all-reduce bytes {grad_bytes} != 4 x {graph['params']} params")
with_protobuf(files[0], nodes)

# With a device: compute nodes carry the analytical engine's per-op times.
timed = os.path.join(OUT, "timed")
run(["graph"] + common + ["--chakra", timed, "--device", "v100_sxm2_16gb", "--system", "dgx1v_nvlink",
                          "--format", "json"])
_, tnodes = decode_file(os.path.join(timed, "resnet50.3.et"))
if [n["name"] for n in tnodes] != names:
    fail("timed export: other nodes")
conv = [n for n in tnodes if n["attrs"]["op_kind"].startswith("conv2d")]
if not conv or any(n["duration"] <= 0 for n in conv):
    fail("a convolution without a duration")
if any(n["duration"] for n in tnodes if n["type"] == 7):
    fail("an all-reduce with a duration (the network simulator times those)")
pred = json.loads(run(["predict", "--model", "resnet50", "--batch", "32", "--count", "8", "--device", "v100_sxm2_16gb",
                       "--system", "dgx1v_nvlink", "--format", "json"]).stdout)
op_s = sum(v for k, v in pred["per_op_s"].items() if k != "all_reduce")
et_s = sum(n["duration"] for n in tnodes if n["type"] == 4) * 1e-6
# Rounding to whole microseconds moves each of ~500 ops by at most 0.5 us; ops predict leaves
# out of per_op_s (views, the input) take no more than their launch overhead.
if abs(et_s - op_s) > 0.02 * op_s:
    fail(f"durations sum to {et_s:.6f} s, predict's ops to {op_s:.6f} s")

# Errors: a TPU device (its times are the SystemC model's), --device without --chakra.
p = run(["graph", "--model", "resnet50", "--chakra", os.path.join(OUT, "tpu"), "--device", "tpu_v2"], ok=False)
if p.returncode != 2 or "--device" not in p.stderr or "analytical" not in p.stderr:
    fail(f"tpu device: exit {p.returncode}: {p.stderr}")
p = run(["graph", "--model", "resnet50", "--device", "v100_sxm2_16gb"], ok=False)
if p.returncode != 2 or "--chakra" not in p.stderr:
    fail(f"--device without --chakra: exit {p.returncode}: {p.stderr}")
print(f"chakra ok: {len(nodes)} nodes x 8 ranks, {len(colls)} all-reduces, {grad_bytes} gradient bytes, "
      f"durations {et_s:.4f} s vs predict ops {op_s:.4f} s")
