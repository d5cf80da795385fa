# Sourced by the `xpusim plan` CLI checks (needs $bin and a `fail` variable): expect FLAG ARGS...
# runs `plan ARGS...` and wants exit 2 with one stderr line "xpusim: error: FLAG: ...".
expect() {
  local flag="$1"; shift
  local err rc
  err="$("$bin" plan "$@" 2>&1 >/dev/null)"; rc=$?
  if [[ $rc -ne 2 || "$err" != *"error: $flag"* || $(wc -l <<<"$err") -ne 1 ]]; then
    echo "FAIL: plan $* -> exit $rc, '$err' (expected exit 2, one line naming $flag)"; fail=1
  else
    echo "ok: $flag: $err"
  fi
}
