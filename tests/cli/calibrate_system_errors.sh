#!/usr/bin/env bash
# `xpusim calibrate --system` bad input (issue 29): one error, exit 2, naming file:line: calibrate
# for a bad `calibrate:` list in a system YAML, and naming --system for a bad selection.
# Usage: calibrate_system_errors.sh XPUSIM SOURCE_DIR
set -uo pipefail
bin="$1"
src="$2"
fail=0
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# A config directory: the real one, with a copy of systems/ holding one bad system.
for e in "$src"/configs/*; do [ "$(basename "$e")" = systems ] || ln -s "$e" "$tmp/$(basename "$e")"; done
mkdir "$tmp/systems"
cp "$src"/configs/systems/*.yaml "$tmp/systems/"
sed 's/^name: server_pcie$/name: bad_pcie/; s/^calibrate: .*/calibrate: [intra_host.allreduce_efficiency, host.cpu_cores]/' \
  "$src/configs/systems/server_pcie.yaml" >"$tmp/systems/bad_pcie.yaml"
line="$(grep -n '^calibrate:' "$tmp/systems/bad_pcie.yaml" | cut -d: -f1)"
ref="$tmp/ref.csv"
head -1 "$src/tests/data/reference/modern_calibration.csv" >"$ref"
grep ',server_pcie,' "$src/tests/data/reference/modern_calibration.csv" | head -2 >>"$ref"

expect() {  # expect PATTERN ARGS...: exit 2 and one stderr line matching PATTERN
  local pat="$1"
  shift
  local err rc
  err="$(XPUSIM_CONFIG_DIR="$tmp" "$bin" calibrate --reference "$ref" "$@" 2>&1 >/dev/null)"
  rc=$?
  if [ "$rc" -ne 2 ]; then echo "FAIL: calibrate $*: exit $rc, want 2 ($err)"; fail=1; return; fi
  if [ "$(wc -l <<<"$err")" -ne 1 ] || ! grep -Eq -- "$pat" <<<"$err"; then
    echo "FAIL: calibrate $*: want one line matching '$pat', got: $err"
    fail=1
  fi
}
expect "bad_pcie\.yaml:$line: calibrate: 'host\.cpu_cores' is not a fittable system field" --system bad_pcie
expect "^xpusim: error: --system: .*no_such_system" --system no_such_system
expect "^xpusim: error: --system: give it without device or framework" --system server_pcie --device a100_pcie_80gb
expect "^xpusim: error: --out: a system fit prints its fields" --system server_pcie --out "$tmp/x.yaml"
expect "^xpusim: error: --system: .*lists no fittable fields" --system dgx1_nvlink
expect "^xpusim: error: --system: no row on 'server_pcie_nvlink'" --system server_pcie_nvlink
expect "^xpusim: error: --objective: 'fast' is not one of log_error, scaling" --system server_pcie --objective fast
expect "^xpusim: error: --objective: scaling applies to a device, framework or system fit" --architecture ampere_ga100 --objective scaling
exit $fail
