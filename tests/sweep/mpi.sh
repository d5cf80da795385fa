#!/usr/bin/env bash
# mpirun -np 2 xpusim sweep gives the bytes of a serial run. Exit 77 (skipped) when xpusim
# was built without MPI or mpirun is missing. Usage: mpi.sh XPUSIM SWEEP.yaml HAVE_MPI
set -euo pipefail
bin="$1"; sweep="$2"; have="${3:-OFF}"
if [[ "$have" != "ON" ]]; then echo "xpusim built without MPI: skipped"; exit 77; fi
command -v mpirun > /dev/null || { echo "no mpirun: skipped"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
flags=(--oversubscribe)
[[ $(id -u) -eq 0 ]] && flags+=(--allow-run-as-root)
"$bin" sweep "$sweep" -o "$tmp/serial.csv" --summary json > "$tmp/serial.json"
mpirun "${flags[@]}" -np 2 "$bin" sweep "$sweep" -o "$tmp/mpi.csv" --summary json > "$tmp/mpi.json"
cmp "$tmp/serial.csv" "$tmp/mpi.csv" || { echo "FAIL: mpirun -np 2 rows differ from serial"; diff "$tmp/serial.csv" "$tmp/mpi.csv" | head; exit 1; }
cmp "$tmp/serial.json" "$tmp/mpi.json" || { echo "FAIL: mpirun -np 2 summary differs from serial"; exit 1; }
# Three ranks for 24 points: uneven shares, same bytes.
mpirun "${flags[@]}" -np 3 "$bin" sweep "$sweep" -o "$tmp/mpi3.jsonl" > /dev/null
"$bin" sweep "$sweep" -o "$tmp/serial.jsonl" > /dev/null
cmp "$tmp/serial.jsonl" "$tmp/mpi3.jsonl" || { echo "FAIL: mpirun -np 3 rows differ from serial"; exit 1; }
# A cut file completed by 2 ranks with --resume.
head -c 1500 "$tmp/serial.csv" > "$tmp/cut.csv"
mpirun "${flags[@]}" -np 2 "$bin" sweep "$sweep" -o "$tmp/cut.csv" --resume > /dev/null
cmp "$tmp/serial.csv" "$tmp/cut.csv" || { echo "FAIL: mpirun -np 2 --resume differs from serial"; exit 1; }
echo "sweep mpi: ok"
