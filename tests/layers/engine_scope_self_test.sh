#!/usr/bin/env bash
# Shows check_engine_scope.sh can fail: a scratch tree whose engine sets the global batch,
# derives a throughput and reads the framework's step overhead must be rejected; the same
# tree with those lines only in comments, or in predict/, accepted.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" && git init -q . && mkdir -p devices/gpu sim/tpu predict
cat > devices/gpu/engine.cpp <<'X'
// rep.global_batch = g.batch * replicas;  (a comment: allowed)
double device_s = 1;
X
echo 'double a = fw.step_overhead_ms; int64_t global_batch = 1;' > predict/host_pass.cpp
echo 'int x = 0;' > sim/tpu/t.cpp
git add -A
bash "$here/check_engine_scope.sh" "$tmp" >/dev/null || { echo "self_test: clean tree rejected"; exit 1; }
echo '  rep.global_batch = g.batch * count;' >> devices/gpu/engine.cpp
echo '  rep.throughput_samples_per_s = rep.global_batch / s;' >> devices/gpu/engine.cpp
echo '  const double o = fw.step_overhead_ms * 1e-3;' >> sim/tpu/t.cpp
echo '  const double p = ds.host_preprocess_ms * fw.input_cost_scale;' >> sim/tpu/t.cpp
git add -A
out=$(bash "$here/check_engine_scope.sh" "$tmp" || true)
for want in 'devices/gpu/engine.cpp:3: .*global batch' 'devices/gpu/engine.cpp:4: .*throughput' \
            'sim/tpu/t.cpp:2: .*step overhead' 'sim/tpu/t.cpp:3: .*input pipeline bound'; do
  grep -qE "$want" <<<"$out" || { echo "self_test: not caught: $want"; echo "$out"; exit 1; }
done
if grep -q '^predict/' <<<"$out"; then echo "self_test: predict/ flagged: $out"; exit 1; fi
echo "self_test: engine-scope violations caught"
