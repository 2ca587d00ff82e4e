#!/usr/bin/env bash
# uid.sh BUILD: who sees what in softverbs status.  Another uid (65534, by
# setpriv) sees none of root's processes; root sees that uid's process,
# without its MR keys, and its QP's last error (without SOFTVERBS_DEBUG);
# the uid sees its own with its keys.
set -euo pipefail
build=$1
sv=$build/bin/softverbs
hold=$build/tests/status/status_hold_qp
# shellcheck source=tests/status/lib.sh
. "$(dirname "$0")/lib.sh"

((EUID == 0)) || st_skip "needs root (to run a process as another uid)"
command -v setpriv >/dev/null || st_skip "setpriv is not installed"
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
"${nobody[@]}" test -x "$sv" || st_skip "uid 65534 may not run $sv"

# shellcheck source=tests/run-env.sh
. "$(dirname "$0")/../run-env.sh"
sv_run_env "$build" || st_fail "no sanitizer runtime for the build in $build"
tmp=$ST_TMP

# hold NAME [PREFIX...]: a process with a QP and an MR (PREFIX: as whom);
# env and setpriv exec it, so ST_PID is its pid.
hold() {
  local out=$tmp/$1.out
  shift
  st_start "$out" "$@" env "${SV_RUN_ENV[@]}" "$hold" 60
}

hold root
rootpid=$ST_PID
hold nobody "${nobody[@]}"
nobodypid=$ST_PID

json_as() { timeout 20 "$@" "$sv" status --json; }
check() {
  python3 -c "$1" "$rootpid" "$nobodypid" || st_fail "$2"
}
json_as >"$tmp/root.json" || st_fail "status as root failed"
json_as "${nobody[@]}" >"$tmp/nobody.json" || st_fail "status as uid 65534 failed"
st_log "root sees: $(python3 -c 'import json,sys; print([(p["pid"], p["uid"]) for p in json.load(open(sys.argv[1]))["processes"]])' "$tmp/root.json")"
st_log "uid 65534 sees: $(python3 -c 'import json,sys; print([(p["pid"], p["uid"]) for p in json.load(open(sys.argv[1]))["processes"]])' "$tmp/nobody.json")"

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
assert 'sends need RTS' in other['qps'][0]['last_error'], other['qps'][0]
" "root does not see uid 65534's process, or sees its keys"
if timeout 20 "$sv" status | grep -A20 "^pid $nobodypid " | grep -m1 '^  mr ' | grep -q 'lkey'; then
  st_fail "the table shows another uid's MR keys"
fi
st_log "PASS"
