#!/usr/bin/env bash
# `xpusim predict --vcd` on the TPU engine writes a VCD that GTKWave can open: a header with
# $timescale, one $var per model signal (unit busy flags, HBM read/write queue depths, host and
# infeed queue depths, step) for every TensorCore of the v2-8, each core in its own scope
# chip<c>.core<i> (each core is simulated, sim/tpu/core_model.hpp), $enddefinitions, then
# time-ordered value changes in which every unit's busy flag, the HBM and infeed queue depths
# and the step take more than one value, on every core; the cores run the same program on the
# same inputs, so every core's signals change at the same times as core 0's.
# Real data, so that the infeed queues fill and drain.
set -u
bin="$1"
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
vcd="$dir/resnet.vcd"
"$bin" predict --device tpu_v2 --count 8 --model resnet50_cifar10 --batch 32 --precision bf16 --data real \
  --vcd "$vcd" --format json >"$dir/out.json" || { echo "predict --vcd failed"; exit 1; }
[[ -s "$vcd" ]] || { echo "no VCD written at $vcd"; ls "$dir"; exit 1; }
# stdout stays the JSON document (SystemC prints its reports on stdout unless silenced), and
# the prediction is the one made without --vcd: the signals observe, never steer.
"$bin" predict --device tpu_v2 --count 8 --model resnet50_cifar10 --batch 32 --precision bf16 --data real \
  --format json >"$dir/plain.json" || { echo "predict failed"; exit 1; }
cmp -s "$dir/out.json" "$dir/plain.json" || { echo "--vcd changed stdout:"; diff "$dir/plain.json" "$dir/out.json" | head; exit 1; }
[[ ! -e "$vcd.vcd" ]] || { echo "SystemC's own .vcd suffix was added: $vcd.vcd"; exit 1; }
python3 - "$vcd" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
head, sep, body = text.partition("$enddefinitions")
assert sep, "no $enddefinitions"
ts = re.search(r"\$timescale\s+(\d+)\s*(\w+)\s+\$end", head)
assert ts and ts.group(1) == "1" and ts.group(2) == "ps", f"timescale: {ts and ts.group(0)}"
assert re.search(r"\$scope module \S+ \$end", head), "no $scope"
vars_ = {}  # id -> (scope path, name, width)
scope = []
for tok in re.finditer(r"\$scope\s+\w+\s+(\S+)\s+\$end|\$upscope\s+\$end|\$var\s+\w+\s+(\d+)\s+(\S+)\s+(\S+)(?:\s+\[[^]]*\])?\s+\$end", head):
    if tok.group(0).startswith("$scope"):
        scope.append(tok.group(1))
    elif tok.group(0).startswith("$upscope"):
        scope.pop()
    else:
        vars_[tok.group(3)] = (".".join(scope[1:]), tok.group(4), int(tok.group(2)))  # below "SystemC"
want = {"mxu_busy", "vector_busy", "dma_in_busy", "dma_out_busy", "ici_busy", "infeed_busy",
        "hbm_read_queue_depth", "hbm_write_queue_depth", "host_queue_depth", "infeed_queue_depth", "step", "ici_wait"}
cores = {}
for ident, (sc, name, _) in vars_.items():
    cores.setdefault(sc, {})[name] = ident
want_scopes = {f"chip{i // 2}.core{i}" for i in range(8)}
assert set(cores) == want_scopes, f"scopes {sorted(cores)}, want {sorted(want_scopes)}"
for sc, sigs in cores.items():
    assert set(sigs) == want, f"{sc}: signals {sorted(sigs)}"
body = re.sub(r"\$comment.*?\$end", "", body, flags=re.S)  # SystemC notes the initial dump
values = {i: set() for i in vars_}
changes_at = {i: [] for i in vars_}
last_t, t, changes = -1, 0, 0
for line in body.splitlines()[1:]:
    line = line.strip()
    if not line or line.startswith("$"):
        continue
    if line[0] == "#":
        t = int(line[1:]); assert t >= last_t, f"time goes back at #{t}"; last_t = t
        continue
    if line[0] in "bB":
        val, ident = line[1:].split()
    else:
        val, ident = line[0], line[1:]
    assert ident in values, f"value change for undeclared id {ident!r}"
    values[ident].add(val); changes_at[ident].append((t, val)); changes += 1
assert last_t > 0, "no simulated time passed"
for ident, (sc, name, _) in vars_.items():
    # May legitimately stay put: the infeed task only waits for a batch, and the host queue
    # holds a batch only while PCIe is busy with the previous one (this host-bound case sends
    # each batch as soon as it is ready). ici_wait rises only when a core waits on a link or a
    # late neighbour: the v2-8's symmetric cores never do (tests/unit/test_tpu_ici.cpp makes them).
    if name in ("infeed_busy", "host_queue_depth", "ici_wait"):
        continue
    assert len(values[ident]) > 1, f"{sc}.{name} never changes: {values[ident]}"
# Symmetric cores: the same waveform on every core.
for sc, sigs in cores.items():
    for name, ident in sigs.items():
        assert changes_at[ident] == changes_at[cores["chip0.core0"][name]], f"{sc}.{name} differs from core 0"
print(f"ok: {len(cores)} cores x {len(want)} signals, {changes} value changes, last time #{last_t} ps")
PY
