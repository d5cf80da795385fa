#!/usr/bin/env bash
# `pip install ./python` with no network (README.md, "Python"): a venv over Debian's
# site-packages (pip, setuptools, wheel), --no-index --no-build-isolation, the project copied
# so that pip's in-tree build leaves the checkout clean. Then, from another directory and with
# no XPUSIM_CONFIG_DIR, the installed package must predict on the configs it carries, and the
# `xpusim` console script pip put in the venv's bin/ must run the CLI shipped in the wheel (its
# version, a listing equal to the module's, a TPU prediction through the shipped plugin, and an
# error with exit 2), with no XPUSIM_BIN and not from the build tree.
# Usage: pip_install.sh PYTHON SOURCE_DIR BUILD_DIR. Exit 77 (skipped) without venv or pip.
set -euo pipefail
py="$1" src="$2" build="$3"
"$py" -c "import venv, ensurepip" 2>/dev/null || { echo "no venv/ensurepip (Debian python3-venv): skipped"; exit 77; }
"$py" -m pip --version >/dev/null 2>&1 || { echo "no pip (Debian python3-pip): skipped"; exit 77; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$py" -m venv --system-site-packages "$tmp/venv"
cp -r "$src/python" "$tmp/python"
rm -rf "$tmp/python/build" "$tmp/python/"*.egg-info
XPUSIM_SOURCE_DIR="$src" XPUSIM_BUILD_DIR="$build" \
  "$tmp/venv/bin/python" -m pip install --no-index --no-build-isolation --quiet "$tmp/python"
unset XPUSIM_CONFIG_DIR PYTHONPATH XPUSIM_BIN XPUSIM_PLUGIN_DIR
cd "$tmp"
"$tmp/venv/bin/python" - "$tmp/venv" <<'PY'
import os, sys
import xpusim
venv = os.path.realpath(sys.argv[1])
where = os.path.realpath(xpusim.__file__)
assert where.startswith(venv), f"imported {where}, not the venv's copy"
assert os.path.realpath(xpusim.config_dir()).startswith(venv), f"configs from {xpusim.config_dir()}, not the package's"
r = xpusim.predict(model='resnet50', device='tpu_v2', count=8, system='cloud_tpu_v2-8', batch=128, precision='bf16')
assert r['throughput_samples_per_s'] > 0 and r['schema_version'] >= 1, r
print(f"pip install: ok ({where}, {r['throughput_samples_per_s']:.1f} samples/s)")
PY

# The console script.
exe="$tmp/venv/bin/xpusim"
[[ -x "$exe" ]] || { echo "FAIL: pip installed no xpusim console script in $tmp/venv/bin"; exit 1; }
ver="$("$exe" --version)" || { echo "FAIL: xpusim --version exited $?"; exit 1; }
pyver="$("$tmp/venv/bin/python" -c 'import xpusim; print(xpusim.__version__)')"
[[ "$ver" == *"$pyver"* ]] || { echo "FAIL: console script version '$ver' vs module '$pyver'"; exit 1; }
"$exe" list devices --format json >"$tmp/devices.json"
"$tmp/venv/bin/python" - "$tmp/devices.json" <<'PY'
import json, sys
import xpusim
cli = json.load(open(sys.argv[1]))
py = xpusim.list("devices")
assert cli["devices"] == py["devices"], "console script's device list differs from the module's"
PY
out="$("$exe" predict --model resnet50 --device tpu_v2 --count 8 --system cloud_tpu_v2-8 --batch 128 --precision bf16 \
  --format json)" || { echo "FAIL: console script predict on tpu_v2"; exit 1; }
grep -q '"throughput_samples_per_s"' <<<"$out" || { echo "FAIL: no throughput in $out"; exit 1; }
# The binary that ran is the wheel's copy inside the venv, not the build tree's.
bin="$("$tmp/venv/bin/python" -c 'from xpusim._cli import find_binary; print(find_binary())')"
[[ "$(realpath "$bin")" == "$(realpath "$tmp/venv")"/* ]] || { echo "FAIL: console script runs $bin"; exit 1; }
set +e
"$exe" predict --model resnet50 --device a100 >/dev/null 2>"$tmp/err"; rc=$?
set -e
[[ $rc == 2 ]] && grep -q "xpusim: error:" "$tmp/err" || { echo "FAIL: bad device: rc $rc $(cat "$tmp/err")"; exit 1; }
echo "console script: ok ($exe -> $bin, $ver)"
