#!/usr/bin/env bash
# `xpusim predict --trace` on the analytical engine (issue 36): an estimated per-op timeline as
# Chrome/Perfetto trace-event JSON. 8 V100s on a DGX-1 train ResNet-50: 8 processes ("device i:
# v100_sxm2_16gb"), each with compute, memory and communication tracks; the communication
# track's slices add up to the prediction's communication_busy_s and the compute track's
# compute slices to time_compute_bound_s + the compute time of memory-bound ops (checked
# against the sum over ops); no slice ends after the device step; counter tracks for DRAM
# bandwidth; stdout is byte-identical with and without --trace; the same trace twice is
# byte-identical; a .json.gz path writes the same JSON gzipped.
set -u
bin="$1"
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
args=(predict --device v100_sxm2_16gb --count 8 --system dgx1v_nvlink --model resnet50 --batch 64
      --precision mixed_fp16 --format json)
"$bin" "${args[@]}" --trace "$dir/t.json" >"$dir/traced.json" || { echo "predict --trace failed"; exit 1; }
"$bin" "${args[@]}" >"$dir/plain.json" || { echo "predict failed"; exit 1; }
cmp -s "$dir/traced.json" "$dir/plain.json" || { echo "--trace changed the prediction"; exit 1; }
"$bin" "${args[@]}" --trace "$dir/t2.json" >/dev/null || { echo "second trace failed"; exit 1; }
cmp -s "$dir/t.json" "$dir/t2.json" || { echo "the same trace twice differs"; exit 1; }
"$bin" "${args[@]}" --trace "$dir/t.json.gz" >/dev/null || { echo "predict --trace .json.gz failed"; exit 1; }
python3 - "$dir/t.json" "$dir/plain.json" "$dir/t.json.gz" <<'PY'
import gzip, json, sys
from collections import defaultdict
doc = json.load(open(sys.argv[1]))
rep = json.load(open(sys.argv[2]))
with gzip.open(sys.argv[3], "rt") as f:
    assert json.load(f) == doc, ".json.gz holds another trace"
procs, tracks, slices, counters = {}, defaultdict(dict), defaultdict(lambda: defaultdict(list)), defaultdict(set)
for e in doc["traceEvents"]:
    if e["ph"] == "M" and e["name"] == "process_name":
        procs[e["pid"]] = e["args"]["name"]
    elif e["ph"] == "M" and e["name"] == "thread_name":
        tracks[e["pid"]][e["tid"]] = e["args"]["name"]
    elif e["ph"] == "X":
        slices[e["pid"]][e["tid"]].append(e)
    elif e["ph"] == "C":
        counters[e["pid"]].add(e["name"])
assert sorted(procs) == list(range(8)), f"pids {sorted(procs)}"
assert all(procs[p] == f"device {p}: v100_sxm2_16gb" for p in procs), procs
for p in procs:
    assert sorted(tracks[p].values()) == ["communication", "compute", "memory (DRAM)"], tracks[p]
    assert "DRAM GB/s" in counters[p] and "in flight all-reduce bytes" in counters[p], counters[p]
# Replicas run the same ops: every device's events equal device 0's.
for p in procs:
    for t in tracks[0]:
        a = [(e["ts"], e["dur"], e["name"]) for e in slices[0][t]]
        b = [(e["ts"], e["dur"], e["name"]) for e in slices[p][t]]
        assert a == b, f"device {p} track {t} differs from device 0"
name = {v: k for k, v in tracks[0].items()}
comm = slices[0][name["communication"]]
compute = [e for e in slices[0][name["compute"]] if e["cat"] != "overhead"]
memory = slices[0][name["memory (DRAM)"]]
assert comm and compute and memory, "empty track"
busy = sum(e["dur"] for e in comm) / 1e6
assert abs(busy - rep["communication_busy_s"]) <= 1e-6 * max(1, len(comm)) + 1e-3 * rep["communication_busy_s"], \
    f"communication slices {busy} s vs communication_busy_s {rep['communication_busy_s']}"
# Slices on one track never overlap (each stream runs in order), and the step bounds them all.
step_us = doc["otherData"]["device_step_s"] * 1e6
for t, evs in slices[0].items():
    evs = sorted(evs, key=lambda e: e["ts"])
    for a, b in zip(evs, evs[1:]):
        assert a["ts"] + a["dur"] <= b["ts"] + 0.002, f"overlap on track {t}: {a['name']} / {b['name']}"
    assert evs[-1]["ts"] + evs[-1]["dur"] <= step_us + 0.002, f"track {t} ends after the device step"
assert step_us <= rep["step_time_s"] * 1e6 + 0.002, "device step longer than the predicted step"
# Backward all-reduces overlap backward compute (the point of the communication track).
last_compute_end = max(e["ts"] + e["dur"] for e in compute)
assert comm[0]["ts"] < last_compute_end, "no all-reduce overlaps compute"
# The op's FLOPs and bytes ride along.
conv = [e for e in compute if e["args"]["kind"] == "conv2d"]
assert conv and all(e["args"]["flops"] > 0 for e in conv), "conv slices without FLOPs"
print(f"{len(procs)} devices, {len(compute)} compute, {len(memory)} memory, {len(comm)} communication slices "
      f"per device; comm busy {busy:.4f} s; device step {step_us/1e3:.2f} ms")
PY
