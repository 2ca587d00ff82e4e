# shellcheck shell=bash
# Shared by tests/status' format.sh and uid.sh: logging, a temporary
# directory ($ST_TMP), and helper processes that say "ready", stopped at exit.
# Use from a script that has `set -euo pipefail`.
ST_NAME=status_$(basename "${0%.sh}")
st_log() { printf '[%s] %s\n' "$ST_NAME" "$*"; }
st_fail() { printf '[%s] FAIL: %s\n' "$ST_NAME" "$*" >&2; exit 1; }
st_skip() { printf '[%s] SKIP: %s\n' "$ST_NAME" "$*"; exit 77; }

ST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/softverbs-$ST_NAME.XXXXXX")
ST_PIDS=()
st_cleanup() {
  local p
  for p in "${ST_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$ST_TMP"
}
trap st_cleanup EXIT

# st_start OUT CMD...: CMD in the background, its output in OUT, until it
# prints a line "ready ..." (10 s at most); its pid ($!) in ST_PID.
st_start() {
  local out=$1 i
  shift
  "$@" >"$out" 2>&1 </dev/null &
  ST_PID=$!
  ST_PIDS+=("$ST_PID")
  for ((i = 0; i < 100; i++)); do
    if grep -q '^ready' "$out"; then return 0; fi
    sleep 0.1
  done
  cat "$out" >&2
  st_fail "$* did not start"
}
