#!/usr/bin/env bash
# Start-up contract (issue 17): the xpusim binary loads neither SystemC nor Open MPI (directly
# or through another library); the tpu_systemc engine and the MPI transport are modules that do,
# each exporting only its entry point; without the TPU module, commands that do not simulate a
# TPU still work and a TPU prediction exits 3 naming the module path and the loader's reason;
# `xpusim --help` peaks below 40 MB of RSS. Start-up time: bench/startup.sh (not a test: wall
# time on a shared machine is not reproducible).
# Usage: lazy_modules.sh XPUSIM_BIN PLUGIN_DIR
set -u
bin="$1" plugins="$2"
source "$(dirname "$0")/../lib/elf_checks.sh"
heavy='lib(systemc[-.0-9]*|mpi|mpi_cxx|open-pal|open-rte)\.so'
refuse_linked "$bin" "$heavy" "SystemC/MPI"
# The pattern must match what the modules need, or the checks above prove nothing.
needed "$plugins/xpusim_tpu_plugin.so" | grep -Eq "^libsystemc" ||
  { echo "the TPU module does not need libsystemc: $(needed "$plugins/xpusim_tpu_plugin.so" | tr '\n' ' ')"; exit 1; }
exported=$(xpusim_exports "$plugins/xpusim_tpu_plugin.so")
[[ $exported -eq 1 ]] || { echo "the TPU module exports $exported xpusim symbols, expected only its entry point"; exit 1; }
if [[ -f "$plugins/xpusim_mpi_transport.so" ]]; then
  needed "$plugins/xpusim_mpi_transport.so" | grep -Eq "^libmpi\.so" || { echo "the MPI module does not need libmpi"; exit 1; }
  exported=$(xpusim_exports "$plugins/xpusim_mpi_transport.so")
  [[ $exported -eq 1 ]] || { echo "the MPI module exports $exported xpusim symbols, expected only its entry point"; exit 1; }
fi

rss_kb=$(/usr/bin/time -f '%M' "$bin" --help 2>&1 >/dev/null | tail -1)
# A sanitizer build maps shadow memory at start-up: its RSS says nothing about the release
# binary's, so the goal is checked only where the binary is not sanitized (the Release stage).
if ldd "$bin" | grep -q 'libasan'; then
  echo "peak RSS goal not checked: sanitizer build ($rss_kb KB)"
else
  (( rss_kb < 40 * 1024 )) || { echo "xpusim --help peaked at $rss_kb KB (goal < 40 MB)"; exit 1; }
fi

tpu=(predict --device tpu_v2 --count 8 --system cloud_tpu_v2-8 --model resnet50 --batch 128 --precision bf16 --format json)
"$bin" "${tpu[@]}" >/dev/null || { echo "TPU prediction failed with the module present"; exit 1; }
missing=$(mktemp -d); trap 'rm -rf "$missing"' EXIT
export XPUSIM_PLUGIN_DIR="$missing"
"$bin" models >/dev/null || { echo "models failed without the TPU module"; exit 1; }
"$bin" predict --device v100_sxm2_16gb --model resnet50 --batch 64 --format json >/dev/null ||
  { echo "a GPU (analytical) prediction failed without the TPU module"; exit 1; }
"$bin" "${tpu[@]}" >/dev/null 2>"$missing/err"; rc=$?
[[ $rc -eq 3 ]] || { echo "exit code $rc for a TPU prediction without the module, expected 3"; cat "$missing/err"; exit 1; }
grep -q "$missing/xpusim_tpu_plugin.so: .*No such file" "$missing/err" ||
  { echo "stderr lacks the module path and dlerror()"; cat "$missing/err"; exit 1; }
echo "ok: --help peak RSS ${rss_kb} KB; without the module: $(cat "$missing/err")"
