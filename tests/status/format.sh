#!/usr/bin/env bash
# format.sh BUILD: softverbs status reads a well-formed status file, refuses
# another format version and a malformed file with a message (and goes on),
# and ignores and removes the file of a dead process (status/format.h).
set -euo pipefail
build=$1
sv=$build/bin/softverbs
fake=$build/tests/status/status_fake
# shellcheck source=tests/status/lib.sh
. "$(dirname "$0")/lib.sh"
dir=$ST_TMP

# start MODE: a fake publisher in the background, its file in place; the
# file's name (its pid) in FAKE.
start() {
  st_start "$dir/.fake-$1" timeout 60 "$fake" "$dir" "$1"
  FAKE=$(awk '/^ready/ { print $2 }' "$dir/.fake-$1")
}

start live; live=$FAKE
start badver; badver=$FAKE
start malformed; malformed=$FAKE
timeout 20 "$fake" "$dir" dead >"$dir/.fake-dead" || st_fail "status_fake dead failed"
dead=$(awk '/^ready/ { print $2 }' "$dir/.fake-dead")
[[ -e $dir/$dead ]] || st_fail "the dead process's file is missing before the test"

out=$(timeout 20 "$sv" status --dir "$dir" 2>"$dir/.err") || st_fail "softverbs status failed: $(cat "$dir/.err")"
err=$(cat "$dir/.err")
st_log "status:"; printf '%s\n' "$out"
st_log "stderr:"; printf '%s\n' "$err"

grep -q "^pid $live comm status_fake " <<<"$out" || st_fail "the live file's process is not listed"
grep -q "qp 0x1234 RC RTS" <<<"$out" || st_fail "the live file's QP is not listed"
grep -Eq "SEND +5 +20480 " <<<"$out" || st_fail "the live QP's counters are not shown"
grep -q "^  3 more qps not shown" <<<"$out" || st_fail "the QPs without a slot are not counted"
grep -q "/$badver: status format version $((1 + $(sed -n 's/^#define SVST_VERSION *\([0-9]*\).*/\1/p' \
  "$(dirname "$0")/../../src/status/format.h"))), this softverbs reads" <<<"$err" ||
  st_fail "the file of another format version was not refused by name"
grep -q "/$malformed: a malformed status file" <<<"$err" || st_fail "the malformed file was not refused"
for p in "$badver" "$malformed" "$dead"; do
  if grep -q "^pid $p " <<<"$out"; then st_fail "process $p listed"; fi
done
[[ ! -e $dir/$dead ]] || st_fail "the dead process's file was not removed"
[[ -e $dir/$live && -e $dir/$badver ]] || st_fail "a live process's file was removed"

timeout 20 "$sv" status --dir "$dir" --json >"$dir/.json" 2>/dev/null || st_fail "status --json failed"
python3 - "$live" "$dir/.json" <<'PY' || st_fail "status --json is wrong"
import json, sys
doc = json.load(open(sys.argv[2]))
procs = [p for p in doc["processes"] if p["pid"] == int(sys.argv[1])]
assert len(doc["processes"]) == 1 and procs, doc
qp = procs[0]["qps"][0]
assert qp["qpn"] == 0x1234 and qp["type"] == "RC" and qp["state"] == "RTS", qp
assert qp["counters"]["tx"]["SEND"] == {"msgs": 5, "bytes": 20480}, qp
assert procs[0]["not_shown"]["qps"] == 3, procs[0]
PY
st_log "PASS"
