#!/usr/bin/env bash
# Shows check_includes.sh can fail: a scratch tree where common/ includes models/ and one
# engine includes another must be rejected, and a clean tree accepted.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" && git init -q . && mkdir -p common models devices/cpu sim/tpu
echo '#include "common/a.hpp"' > models/m.hpp
echo '#include "models/m.hpp"' > devices/cpu/c.cpp
echo '' > common/a.hpp
echo '' > sim/tpu/t.hpp
git add -A
bash "$here/check_includes.sh" "$tmp" >/dev/null || { echo "self_test: clean tree rejected"; exit 1; }
echo '#include "models/m.hpp"' >> common/a.hpp
echo '#include "sim/tpu/t.hpp"' >> devices/cpu/c.cpp
echo 'const char* f = "--batch";' >> models/m.hpp
git add -A
out=$(bash "$here/check_includes.sh" "$tmp" || true)
grep -q 'common may not include models' <<<"$out" || { echo "self_test: upward include not caught: $out"; exit 1; }
grep -q 'devices/cpu may not include sim/tpu' <<<"$out" || { echo "self_test: sibling include not caught: $out"; exit 1; }
grep -q 'models/m.hpp:.*literal below cli' <<<"$out" || { echo "self_test: flag literal not caught: $out"; exit 1; }
echo "self_test: violations caught"
