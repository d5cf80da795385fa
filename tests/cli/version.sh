#!/usr/bin/env bash
# `xpusim --version`: line 1 is "xpusim <project version> (<short git hash or unknown>)", line 2
# lists the engines compiled in (cuda exactly when the CUDA backend was built); exit code 0.
# Usage: version.sh XPUSIM PROJECT_VERSION HAVE_CUDA(ON|OFF)
set -euo pipefail
bin="$1" version="$2" have_cuda="$3"
out="$("$bin" --version)"
line1="$(sed -n 1p <<<"$out")" line2="$(sed -n 2p <<<"$out")"
re="^xpusim ${version//./\\.} \(([0-9a-f]{7,40}|unknown)\)$"
[[ "$line1" =~ $re ]] || { echo "FAIL: first line '$line1' does not match $re"; exit 1; }
[[ "$line2" == "engines: "* ]] || { echo "FAIL: second line '$line2' does not list engines"; exit 1; }
for e in tpu_systemc analytical cpu; do
  [[ ", ${line2#engines: }," == *", $e,"* ]] || { echo "FAIL: engine $e missing from '$line2'"; exit 1; }
done
if [[ "$have_cuda" == ON ]]; then
  [[ "$line2" == *cuda* ]] || { echo "FAIL: built with CUDA but '$line2' has no cuda"; exit 1; }
else
  [[ "$line2" != *cuda* ]] || { echo "FAIL: built without CUDA but '$line2' lists cuda"; exit 1; }
fi
echo "version: ok: $line1 / $line2"
