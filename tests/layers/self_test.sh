#!/usr/bin/env bash
# Shows check_includes.sh can fail: a scratch tree where common/ includes models/, one engine
# includes another, two units of different folders include each other (the zoo <-> onnx loop
# that was), two headers include each other and a library literal names a flag mid-sentence
# must be rejected, and a clean tree accepted.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" && git init -q . && mkdir -p common models/onnx devices/cpu sim/tpu
echo '#include "common/a.hpp"' > models/m.hpp
echo '#include "models/m.hpp"' > devices/cpu/c.cpp
echo '' > common/a.hpp
echo '' > sim/tpu/t.hpp
echo '#include "models/onnx/o.hpp"' > models/zoo.hpp
echo '' > models/onnx/o.hpp
echo '#include "models/onnx/o.hpp"' > models/onnx/o.cpp
# One folder's units may lean on each other's sources (a header and a source).
echo '#include "common/a.hpp"' > common/b.cpp
echo '' > common/b.hpp
echo '#include "common/b.hpp"' > common/a.cpp
echo 'const char* ok = "-- not a flag";' >> models/m.hpp
git add -A
out=$(bash "$here/check_includes.sh" "$tmp") || { echo "self_test: clean tree rejected: $out"; exit 1; }
echo '#include "models/m.hpp"' >> common/a.hpp
echo '#include "sim/tpu/t.hpp"' >> devices/cpu/c.cpp
echo 'const char* f = "--batch";' >> models/m.hpp
echo 'const char* g = "try a smaller --batch";' >> sim/tpu/t.hpp
echo '#include "models/zoo.hpp"' >> models/onnx/o.cpp
echo '#include "common/b.hpp"' >> common/a.hpp
echo '#include "common/a.hpp"' >> common/b.hpp
git add -A
out=$(bash "$here/check_includes.sh" "$tmp" || true)
grep -q 'common may not include models' <<<"$out" || { echo "self_test: upward include not caught: $out"; exit 1; }
grep -q 'devices/cpu may not include sim/tpu' <<<"$out" || { echo "self_test: sibling include not caught: $out"; exit 1; }
grep -q 'models/m.hpp:.*--flag in a string literal' <<<"$out" || { echo "self_test: flag literal not caught: $out"; exit 1; }
grep -q 'sim/tpu/t.hpp:.*--flag in a string literal' <<<"$out" || { echo "self_test: mid-literal flag not caught: $out"; exit 1; }
grep -q 'include loop between units of different folders: .*models/zoo.*' <<<"$out" ||
  grep -q 'include loop between units of different folders: .*models/onnx/o.*' <<<"$out" ||
  { echo "self_test: zoo <-> onnx loop not caught: $out"; exit 1; }
grep -q 'include loop between headers: .*common/a.hpp' <<<"$out" || { echo "self_test: header loop not caught: $out"; exit 1; }
echo "self_test: violations caught"
