#!/bin/bash
# selfcontained_diff.sh BUILD_DIR PROBE
#
# Runs PROBE (selfcontained_probe) against the system libibverbs.so.1 and
# against BUILD_DIR/lib/libibverbs.so.1 and requires identical output for
# the self-contained functions: ibv_*_str tables, rate conversions, the
# kernel-ABI copy helpers (byte for byte, padding included) and
# ibv_get_sysfs_path / ibv_read_sysfs_file (on files made here, with and
# without a SYSFS_PATH override).  Then runs PROBE's "stubs" mode against
# ours: every 1.0 compat symbol, private stub and unsupported verb must fail
# cleanly, without crashing, when called with NULL arguments.
#
# Exit status: 0 pass, 1 fail, 77 skip (no system libibverbs.so.1).
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 BUILD_DIR PROBE" >&2
  exit 2
fi
BUILD=$1
PROBE=$2
OURS=$BUILD/lib/libibverbs.so.1

log() { printf '[selfcontained_diff] %s\n' "$*"; }

SYS=
for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib; do
  if [[ -e $d/libibverbs.so.1 ]]; then SYS=$d/libibverbs.so.1; break; fi
done
[[ -n $SYS ]] || { log "SKIP: no system libibverbs.so.1"; exit 77; }
[[ -e $OURS ]] || { log "FAIL: $OURS does not exist"; exit 1; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/selfcontained.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# Files for ibv_read_sysfs_file.
D=$TMP/sysfs
mkdir -p "$D/sub"
printf 'abc\n' >"$D/newline"
printf 'abc' >"$D/no_newline"
printf '12345678' >"$D/exact"
printf '1234567\n' >"$D/exact_newline"
printf 'ab\n\n' >"$D/two_newlines"
: >"$D/empty"
head -c 100 /dev/zero | tr '\0' 'z' >"$D/big"
printf 'nested\n' >"$D/sub/nested"

# The probe and the libraries run without our build dir in the search path:
# each library is dlopen()ed by its full path.
run_probe() {  # OUTPUT LIB [VAR=VALUE...]
  local out=$1 lib=$2 rc=0
  shift 2
  env -u SYSFS_PATH "$@" timeout -k 5 120 "$PROBE" dump "$lib" "$D" >"$out" 2>"$out.err" || rc=$?
  if [[ $rc -ne 0 ]]; then
    log "probe of $lib exited $rc"
    sed 's/^/    /' "$out.err" | head -20
    grep '^MISSING' "$out" | sed 's/^/    /' || true
    return 1
  fi
}

status=0
for variant in plain override; do
  extra=()
  [[ $variant == override ]] && extra=("SYSFS_PATH=$TMP/fake-sysfs///")
  run_probe "$TMP/sys.$variant" "$SYS" "${extra[@]}" || status=1
  run_probe "$TMP/ours.$variant" "$OURS" "${extra[@]}" || status=1
  if ! cmp -s "$TMP/sys.$variant" "$TMP/ours.$variant"; then
    log "FAIL ($variant): results differ from the system library (- system, + ours):"
    diff -U0 "$TMP/sys.$variant" "$TMP/ours.$variant" | grep -E '^[-+][^-+]' | head -80 | sed 's/^/    /'
    status=1
  else
    log "OK ($variant): $(wc -l <"$TMP/sys.$variant") lines of results identical"
  fi
done

log "stubs of $OURS:"
rc=0
timeout -k 5 60 "$PROBE" stubs "$OURS" >"$TMP/stubs" 2>&1 || rc=$?
grep -v '^ok ' "$TMP/stubs" | sed 's/^/    /' || true
log "$(grep -c '^ok ' "$TMP/stubs" || true) stub checks passed"
if [[ $rc -ne 0 ]]; then
  log "FAIL: stubs check exited $rc"
  status=1
fi

exit $status
