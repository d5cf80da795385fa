# Sourced by the ONNX checks: sets $py to a python3 that imports torch and torchvision, or exits
# 77 (ctest: SKIPPED) saying which packages give one. XPUSIM_TORCH_PYTHON names the interpreter
# (only it is tried); else Debian's, then PATH's.
py=""
cands=(/usr/bin/python3 python3)
[[ -n "${XPUSIM_TORCH_PYTHON:-}" ]] && cands=("$XPUSIM_TORCH_PYTHON")
for cand in "${cands[@]}"; do
  if "$cand" -c 'import torch, torchvision' 2>/dev/null; then py="$cand"; break; fi
done
if [[ -z "$py" ]]; then echo "SKIPPED: no python3 with torch and torchvision (apt-get install python3-torch python3-torchvision)"; exit 77; fi
