#!/usr/bin/env bash
# `xpusim predict --trace` on the TPU engine writes a Chrome/Perfetto trace-event JSON in which
# every TensorCore of a v2-8 (4 chips x 2 cores) is its own simulated core: 8 processes named
# "tpu_v2 core i (chip i/2)" with no "simulated once" copies, each with the six unit tracks,
# each with its own complete events; the otherData metadata says 8 of 8 cores were
# simulated; stdout is byte-identical to the prediction without --trace (the traced step
# time equals the untraced one); the all-reduces of all cores overlap (the ring is a barrier).
# Real data, so that the infeed of every core is traced too.
set -u
bin="$1"
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
args=(predict --device tpu_v2 --count 8 --system cloud_tpu_v2-8 --model resnet50_cifar10 --batch 32
      --precision bf16 --data real --format json)
"$bin" "${args[@]}" --trace "$dir/t.json" >"$dir/traced.json" || { echo "predict --trace failed"; exit 1; }
"$bin" "${args[@]}" >"$dir/plain.json" || { echo "predict failed"; exit 1; }
cmp -s "$dir/traced.json" "$dir/plain.json" || { echo "--trace changed the prediction:"; diff "$dir/plain.json" "$dir/traced.json" | head; exit 1; }
# Streamed and gzip-able (issue 36): the .json.gz holds the same bytes, and a second run
# writes the same trace.
"$bin" "${args[@]}" --trace "$dir/t.json.gz" >/dev/null || { echo "predict --trace .json.gz failed"; exit 1; }
gzip -dc "$dir/t.json.gz" | cmp -s - "$dir/t.json" || { echo "the .json.gz trace differs from the .json one"; exit 1; }
# With a waveform every DMA burst is its own SystemC wait (no back-to-back runs): the queue
# counters must not change (they record a run of bursts as one record otherwise).
"$bin" "${args[@]}" --trace "$dir/v.json" --vcd "$dir/w.vcd" >/dev/null || { echo "predict --trace --vcd failed"; exit 1; }
python3 - "$dir/t.json" "$dir/plain.json" "${XPUSIM_CONFIG_DIR:-configs}/devices/tpu_v2.yaml" "$dir/v.json" <<'PY'
import json, sys
from collections import defaultdict
doc = json.load(open(sys.argv[1]))
# Back-to-back tasks of one op on one unit are one event (args.tasks of them); every
# simulated task is in exactly one event, and events on one track never overlap.
# (ICI waits, tid 6, are no task.)
tasks = sum(e["args"]["tasks"] for e in doc["traceEvents"] if e["ph"] == "X" and e["tid"] != 6)
assert tasks == doc["otherData"]["simulated_tasks"], f"{tasks} tasks in events, {doc['otherData']['simulated_tasks']} simulated"
assert tasks > sum(1 for e in doc["traceEvents"] if e["ph"] == "X" and e["tid"] != 6), "nothing coalesced"
last = {}
for e in doc["traceEvents"]:
    if e["ph"] != "X":
        continue
    k = (e["pid"], e["tid"])
    assert e["ts"] >= last.get(k, -1.0) - 1e-6, f"overlap on {k} at {e['ts']}"
    last[k] = e["ts"] + e["dur"]
step_us = json.load(open(sys.argv[2]))["step_time_s"] * 1e6
procs, tracks, events = {}, defaultdict(set), defaultdict(list)
for e in doc["traceEvents"]:
    if e["ph"] == "M" and e["name"] == "process_name":
        procs[e["pid"]] = e["args"]["name"]
    elif e["ph"] == "M" and e["name"] == "thread_name":
        tracks[e["pid"]].add((e["tid"], e["args"]["name"]))
    elif e["ph"] == "X":
        events[e["pid"]].append(e)
assert sorted(procs) == list(range(8)), f"pids: {sorted(procs)}"
for pid, name in procs.items():
    want = f"xpusim tpu_systemc: tpu_v2 core {pid} (chip {pid // 2})"
    assert name == want, f"pid {pid}: {name!r}, want {want!r}"
    assert "simulated once" not in name
units = {(0, "mxu"), (1, "vector"), (2, "hbm_read"), (3, "hbm_write"), (4, "ici"), (5, "infeed"), (6, "ici_wait")}
for pid in range(8):
    assert tracks[pid] == units, f"pid {pid} tracks {sorted(tracks[pid])}"
    used = {e["tid"] for e in events[pid]}
    assert {0, 1, 2, 3, 4} <= used, f"pid {pid} has events on tids {sorted(used)}"
    assert len(events[pid]) == len(events[0]), f"pid {pid}: {len(events[pid])} events, core 0 {len(events[0])}"
    end = max(e["ts"] + e["dur"] for e in events[pid])
    # The prediction's step, but for ties at the HBM channel (docs/tpu-model.md, Every core).
    assert abs(end - step_us) <= 1e-3 * step_us, f"pid {pid} ends at {end} us, step {step_us} us"
other = doc["otherData"]
assert other["cores"] == 8 and other["simulated_cores"] == 8, other
assert len(set(other["simulated_step_time_s"])) == 1, f"cores differ: {other['simulated_step_time_s']}"
assert other["predicted_step_time_s"] * 1e6 == step_us
# The board's ICI links: 8 chip links and 8 on-chip ports of the 2x2 chips, each carrying bytes.
assert len(other["ici_links"]) == 16 and all(l["bytes"] > 0 for l in other["ici_links"]), other["ici_links"]
# Every all-reduce (ici event of one op) overlaps on all 8 cores: no core leaves the ring early.
ici = defaultdict(list)
for pid in range(8):
    for e in events[pid]:
        if e["tid"] == 4:
            ici[e["name"]].append((e["ts"], e["ts"] + e["dur"]))
assert ici, "no all-reduce events"
for name, spans in ici.items():
    assert len(spans) == 8, f"{name}: on {len(spans)} cores"
    assert max(s for s, _ in spans) < min(t for _, t in spans), f"{name}: all-reduces do not overlap {spans}"
# Counter tracks (issue 36): per core, "UNIT GB/s" of each data-moving unit. The area under a
# counter (GB/s x us = kB) is the bytes its unit's events moved; a counter ends at 0; its times
# never go back; HBM rates stay under the chip's 350 GB/s (configs/devices/tpu_v2.yaml).
counters = defaultdict(list)
for e in doc["traceEvents"]:
    if e["ph"] == "C" and e["name"].endswith(" GB/s"):
        counters[(e["pid"], e["name"])].append((e["ts"], e["args"]["GB/s"]))
# (The infeed finishes between steps here: a counter only where its unit has events.)
tid_of = {"hbm_read GB/s": 2, "hbm_write GB/s": 3, "ici GB/s": 4, "infeed GB/s": 5}
for pid in range(8):
    for name, tid in tid_of.items():
        pts = counters.get((pid, name))
        if tid == 5 and not any(e["tid"] == 5 for e in events[pid]):
            assert not pts, f"pid {pid}: infeed counter without infeed events"
            continue
        assert pts, f"pid {pid}: no counter {name!r}"
        assert all(b[0] >= a[0] for a, b in zip(pts, pts[1:])), f"pid {pid} {name}: time goes back"
        assert pts[-1][1] == 0, f"pid {pid} {name}: ends at {pts[-1][1]}"
        area_kb = sum((b[0] - a[0]) * a[1] for a, b in zip(pts, pts[1:]))  # GB/s x us = kB
        moved = sum(e["args"]["bytes"] for e in events[pid] if e["tid"] == tid)
        assert moved > 0 and abs(area_kb * 1e3 - moved) <= 1e-3 * moved, f"pid {pid} {name}: area {area_kb * 1e3} B, events {moved} B"
        if tid in (2, 3):
            assert max(v for _, v in pts) <= 350 + 1e-9, f"pid {pid} {name}: {max(v for _, v in pts)} GB/s > 350"
assert not any(e["ph"] == "C" and e["name"] in ("mxu GB/s", "vector GB/s") for e in doc["traceEvents"])
# Queue-depth counters (issue 36): per core, the four queues of the VCD, the max depth per bin.
# Capacities derived here, not read from the trace: the host and infeed queues hold at most
# prefetch_depth_batches (configs/devices/tpu_v2.yaml) batches; a DMA queue at most the bursts of
# its largest transfer, so at most ceil(largest hbm_read/hbm_write event's bytes / 1 MiB burst).
# The DMA queues are empty at the end of the step; the counters the trace names match.
import math, re
yaml_text = open(sys.argv[3]).read()
prefetch = int(re.search(r"^prefetch_depth_batches:\s*(\d+)", yaml_text, re.M).group(1))
queues = {"hbm_read_queue_depth": 2, "hbm_write_queue_depth": 3, "host_queue_depth": None, "infeed_queue_depth": None}
qpts = defaultdict(list)
for e in doc["traceEvents"]:
    if e["ph"] == "C" and e["name"] in queues:
        qpts[(e["pid"], e["name"])].append((e["ts"], e["args"]["depth"]))
cap = other["queue_capacity"]
assert cap["host_queue_depth"] == prefetch and cap["infeed_queue_depth"] == prefetch, cap
seen_busy = set()
for pid in range(8):
    step_end = max(e["ts"] + e["dur"] for e in events[pid])
    for name, tid in queues.items():
        pts = qpts.get((pid, name))
        assert pts, f"pid {pid}: no counter {name!r}"
        assert all(b[0] > a[0] for a, b in zip(pts, pts[1:])), f"pid {pid} {name}: time does not advance"
        assert all(b[1] != a[1] for a, b in zip(pts, pts[1:])), f"pid {pid} {name}: a point that changes nothing"
        assert min(v for _, v in pts) >= 0, f"pid {pid} {name}: negative depth"
        top = max(v for _, v in pts)
        if tid is None:
            limit = prefetch
        else:
            # A transfer's bursts: the largest single task is at most the largest merged event.
            limit = math.ceil(max(e["args"]["bytes"] for e in events[pid] if e["tid"] == tid) / 2**20)
            assert pts[-1][1] == 0, f"pid {pid} {name}: ends at depth {pts[-1][1]}"
            assert top <= cap[name], f"pid {pid} {name}: {top} > the trace's capacity {cap[name]}"
        assert top <= limit, f"pid {pid} {name}: depth {top} > capacity {limit}"
        if top > 0:
            seen_busy.add(name)
        assert pts[-1][0] <= step_end + 1e-3 * step_end + 1, f"pid {pid} {name}: point at {pts[-1][0]} past the step {step_end}"
# Real data: batches wait in the infeed queue, and every DMA queue fills. (The host queue
# stays 0 here: the PCIe copy of a batch ends before the host has the next one ready.)
assert seen_busy >= set(queues) - {"host_queue_depth"}, f"queues never above 0: {set(queues) - seen_busy}"
assert len(qpts) == 8 * 4, sorted(qpts)
with_vcd = [e for e in json.load(open(sys.argv[4]))["traceEvents"] if e["ph"] == "C" and e["name"] in queues]
assert with_vcd == [e for e in doc["traceEvents"] if e["ph"] == "C" and e["name"] in queues], "queue counters differ with --vcd"
print(f"ok: 8 cores, {sum(len(v) for v in events.values())} events, {len(ici)} all-reduces overlapping, "
      f"{sum(len(v) for v in counters.values())} GB/s and {sum(len(v) for v in qpts.values())} queue-depth counter points")
PY
