#!/usr/bin/env bash
# uid.sh BUILD: who sees what in softverbs status.  Another uid (65534, by
# setpriv) sees none of root's processes; root sees that uid's process,
# without its MR keys; the uid sees its own with them.
set -euo pipefail
build=$1
sv=$build/bin/softverbs
hold=$build/tests/status/status_hold_qp
name=status_uid
log() { printf '[%s] %s\n' "$name" "$*"; }
fail() { printf '[%s] FAIL: %s\n' "$name" "$*" >&2; exit 1; }
skip() { printf '[%s] SKIP: %s\n' "$name" "$*"; exit 77; }

((EUID == 0)) || skip "needs root (to run a process as another uid)"
command -v setpriv >/dev/null || skip "setpriv is not installed"
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
"${nobody[@]}" test -x "$sv" || skip "uid 65534 may not run $sv"

# shellcheck source=tests/run-env.sh
. "$(dirname "$0")/../run-env.sh"
sv_run_env "$build" || fail "no sanitizer runtime for the build in $build"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/softverbs-status-uid.XXXXXX")
chmod 755 "$tmp"
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

# hold NAME [PREFIX...]: a process with a QP and an MR, pid printed once ready.
hold() {
  local out=$tmp/$1.out i
  shift
  "$@" env "${SV_RUN_ENV[@]}" "$hold" 60 >"$out" 2>&1 &
  pids+=($!)
  for ((i = 0; i < 200; i++)); do
    if grep -q '^ready' "$out"; then return 0; fi
    sleep 0.1
  done
  cat "$out" >&2
  fail "status_hold_qp did not start"
}

hold root
rootpid=${pids[0]}
hold nobody "${nobody[@]}"
nobodypid=${pids[1]}
sleep 0.2

json_as() { timeout 20 "$@" "$sv" status --json; }
check() {
  python3 -c "$1" "$rootpid" "$nobodypid" || fail "$2"
}
json_as >"$tmp/root.json" || fail "status as root failed"
json_as "${nobody[@]}" >"$tmp/nobody.json" || fail "status as uid 65534 failed"
log "root sees: $(python3 -c 'import json,sys; print([(p["pid"], p["uid"]) for p in json.load(open(sys.argv[1]))["processes"]])' "$tmp/root.json")"
log "uid 65534 sees: $(python3 -c 'import json,sys; print([(p["pid"], p["uid"]) for p in json.load(open(sys.argv[1]))["processes"]])' "$tmp/nobody.json")"

check "
import json, sys
root, nobody = int(sys.argv[1]), int(sys.argv[2])
seen = {p['pid']: p for p in json.load(open('$tmp/nobody.json'))['processes']}
assert root not in seen, 'uid 65534 sees root process %d' % root
assert all(p['uid'] == 65534 for p in seen.values()), 'uid 65534 sees another uid'
me = seen[nobody]
assert me['keys_shown'] and 'rkey' in me['mrs'][0], me
assert me['qps'][0]['type'] == 'RC' and me['qps'][0]['state'] == 'INIT', me
" "uid 65534 sees root's processes, or not its own with keys"
check "
import json, sys
root, nobody = int(sys.argv[1]), int(sys.argv[2])
seen = {p['pid']: p for p in json.load(open('$tmp/root.json'))['processes']}
assert seen[root]['keys_shown'] and 'lkey' in seen[root]['mrs'][0], seen[root]
other = seen[nobody]
assert other['uid'] == 65534 and not other['keys_shown'], other
assert all('lkey' not in m and 'rkey' not in m for m in other['mrs']), other
assert other['qps'][0]['state'] == 'INIT', other
" "root does not see uid 65534's process, or sees its keys"
if timeout 20 "$sv" status | grep -A20 "^pid $nobodypid " | grep -m1 '^  mr ' | grep -q 'lkey'; then
  fail "the table shows another uid's MR keys"
fi
log "PASS"
