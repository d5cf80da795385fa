#!/usr/bin/env bash
# `pip install ./python` with no network (README.md, "Python"): a venv over Debian's
# site-packages (pip, setuptools, wheel), --no-index --no-build-isolation, the project copied
# so that pip's in-tree build leaves the checkout clean. Then, from another directory and with
# no XPUSIM_CONFIG_DIR, the installed package must predict on the configs it carries.
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
unset XPUSIM_CONFIG_DIR PYTHONPATH
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
