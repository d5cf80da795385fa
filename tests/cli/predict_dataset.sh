#!/usr/bin/env bash
# `xpusim predict --dataset`: the corpus a Transformer's samples come from. BERT-large at 512
# tokens on Wikipedia with the NGC PyTorch profile (LDDL's length bins) runs shorter steps and
# says so; a misspelt name is the flag's error with a suggestion, exit 2.
# Usage: predict_dataset.sh XPUSIM
set -uo pipefail
bin="$1"
fail=0
common=(predict --model bert_large --device a100_sxm4_80gb --system dgx_a100 --framework pytorch --batch 16
        --seq-len 512 --precision tf32 --data real --format json)
json="$("$bin" "${common[@]}" --dataset wikipedia_bookcorpus)" || { echo "FAIL: predict --dataset"; exit 1; }
plain="$("$bin" "${common[@]}")" || { echo "FAIL: predict without --dataset"; exit 1; }
python3 - "$json" "$plain" <<'PY' || fail=1
import json, sys
binned, plain = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert binned["seq_len_max_tokens"] == 512 and binned["seq_len_step_tokens"] < 512, binned
assert "seq_len_step_tokens" not in plain, "SST-2 (the model's own dataset) states no documents"
assert binned["throughput_samples_per_s"] > plain["throughput_samples_per_s"], (binned, plain)
assert binned["memory_bytes"] == plain["memory_bytes"], "memory is the 512-token step's"
PY
err="$("$bin" "${common[@]}" --dataset wikipedia_bookcorpu 2>&1 >/dev/null)"
rc=$?
[ "$rc" -eq 2 ] || { echo "FAIL: a misspelt --dataset exits $rc, not 2"; fail=1; }
grep -q "^xpusim: error: --dataset: unknown dataset 'wikipedia_bookcorpu'; did you mean wikipedia_bookcorpus?" <<<"$err" ||
  { echo "FAIL: the error reads '$err'"; fail=1; }
[ "$fail" -eq 0 ] && echo "predict --dataset: all checks passed"
exit "$fail"
