#!/usr/bin/env bash
# cmake --install into a temporary prefix, then use it as a user would: run PREFIX/bin/xpusim
# from another directory with no XPUSIM_CONFIG_DIR (so it must find PREFIX/share/xpusim/configs),
# and build a small program against the package with find_package(xpusim).
# Usage: run.sh BUILD_DIR CMAKE CXX_COMPILER GENERATOR
set -euo pipefail
build="$1" cmake="$2" cxx="$3" gen="$4"
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
"$cmake" --install "$build" --prefix "$prefix" >/dev/null
unset XPUSIM_CONFIG_DIR
cd "$tmp"

configs="$prefix/share/xpusim/configs"
[[ -f "$configs/studies/riseml_resnet50_published.yaml" ]] || { echo "FAIL: configs not installed under $configs"; exit 1; }
# A study that exists only in the installed configs: found only if the binary looks beside itself.
cp "$configs/studies/riseml_resnet50_published.yaml" "$configs/studies/installed_only_check.yaml"
for study in riseml_resnet50_published installed_only_check; do
  "$prefix/bin/xpusim" compare "$study" --format json >"$study.json"
  python3 - "$study.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
# Rows: the longest list of objects anywhere in the document.
def lists(x):
    if isinstance(x, list):
        yield x
        for y in x: yield from lists(y)
    elif isinstance(x, dict):
        for y in x.values(): yield from lists(y)
rows = max((l for l in lists(doc) if l and all(isinstance(r, dict) for r in l)), key=len, default=[])
if len(rows) < 2:
    sys.exit(f"FAIL: {sys.argv[1]}: no rows in the compare JSON")
print(f"{sys.argv[1]}: {len(rows)} rows")
PY
done

# The installed binary loads the installed TPU engine module, not the build tree's.
loaded=$(LD_DEBUG=files "$prefix/bin/xpusim" predict --device tpu_v2 --count 8 --system cloud_tpu_v2-8 --model resnet50 \
           --batch 128 --precision bf16 --format json 2>&1 >/dev/null | grep -o "file=[^ ]*xpusim_tpu_plugin.so" | head -1)
[[ "$loaded" == "file=$prefix/"*"/xpusim/xpusim_tpu_plugin.so" ]] ||
  { echo "FAIL: installed xpusim loaded '${loaded#file=}', not the TPU module under $prefix"; exit 1; }

# With the CUDA engine built: the installed binary loads the installed module (not the build
# tree's), which `xpusim backends` triggers; the loader's log names the file it opened.
if [[ -f "$build/plugins/xpusim_cuda_plugin.so" ]]; then
  loaded=$(LD_DEBUG=files "$prefix/bin/xpusim" backends 2>&1 >/dev/null | grep -o "file=[^ ]*xpusim_cuda_plugin.so" | head -1)
  [[ "$loaded" == "file=$prefix/"*"/xpusim/xpusim_cuda_plugin.so" ]] ||
    { echo "FAIL: installed xpusim loaded '${loaded#file=}', not the module under $prefix"; exit 1; }
fi

# The Python package, when built: importable with PYTHONPATH at PREFIX's site-packages, and it
# runs on PREFIX/share/xpusim/configs (found from its own location, no XPUSIM_CONFIG_DIR).
site=$(ls -d "$prefix"/lib/python3*/site-packages 2>/dev/null | head -1 || true)
if [[ -n "$site" && -d "$site/xpusim" ]]; then
  PYTHONPATH="$site" python3 - "$configs" <<'PY'
import os, sys
import xpusim
assert os.path.realpath(xpusim.config_dir()) == os.path.realpath(sys.argv[1]), xpusim.config_dir()
r = xpusim.predict(model='resnet50', device='tpu_v2', count=8, system='cloud_tpu_v2-8', batch=128, precision='bf16')
assert r['throughput_samples_per_s'] > 0, r
print(f"python: ok ({xpusim.__file__})")
PY
  # `python -m xpusim` (the console script's runner) finds PREFIX/bin/xpusim from the package.
  v="$(env -u XPUSIM_BIN PYTHONPATH="$site" python3 -c 'from xpusim._cli import find_binary; print(find_binary())')"
  [[ "$(realpath "$v")" == "$(realpath "$prefix/bin/xpusim")" ]] || { echo "FAIL: python -m xpusim runs $v"; exit 1; }
  env -u XPUSIM_BIN PYTHONPATH="$site" python3 -m xpusim --version | grep -q "^xpusim " ||
    { echo "FAIL: python -m xpusim --version"; exit 1; }
  echo "python -m xpusim: ok ($v)"
elif [[ -d "$build/python/xpusim" ]]; then
  echo "FAIL: the Python package was built but not installed under $prefix/lib/python3*/site-packages"; exit 1
fi

# A consumer project: find_package(xpusim), link xpusim::core, run it on the installed configs.
"$cmake" -S "$here/consumer" -B "$tmp/consumer" -G "$gen" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
"$cmake" --build "$tmp/consumer" >/dev/null
"$tmp/consumer/consumer" "$configs"
echo "install: ok"
