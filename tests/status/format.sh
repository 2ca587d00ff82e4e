#!/usr/bin/env bash
# format.sh BUILD: softverbs status reads a well-formed status file, refuses
# another format version and a malformed file with a message (and goes on),
# and ignores and removes the file of a dead process (status/format.h).
set -euo pipefail
build=$1
sv=$build/bin/softverbs
fake=$build/tests/status/status_fake
name=status_format
log() { printf '[%s] %s\n' "$name" "$*"; }
fail() { printf '[%s] FAIL: %s\n' "$name" "$*" >&2; exit 1; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/softverbs-status-format.XXXXXX")
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT

# start MODE: a fake publisher in the background; prints its pid once its
# file is in place.
start() {
  local out=$dir/.fake-$1 i
  timeout 60 "$fake" "$dir" "$1" >"$out" 2>&1 &
  pids+=($!)
  for ((i = 0; i < 100; i++)); do
    if grep -q '^ready' "$out"; then awk '/^ready/ { print $2 }' "$out"; return 0; fi
    sleep 0.1
  done
  cat "$out" >&2
  fail "status_fake $1 did not start"
}

live=$(start live)
badver=$(start badver)
malformed=$(start malformed)
timeout 20 "$fake" "$dir" dead >"$dir/.fake-dead" || fail "status_fake dead failed"
dead=$(awk '/^ready/ { print $2 }' "$dir/.fake-dead")
[[ -e $dir/$dead ]] || fail "the dead process's file is missing before the test"

out=$(timeout 20 "$sv" status --dir "$dir" 2>"$dir/.err") || fail "softverbs status failed: $(cat "$dir/.err")"
err=$(cat "$dir/.err")
log "status:"; printf '%s\n' "$out"
log "stderr:"; printf '%s\n' "$err"

grep -q "^pid $live comm status_fake " <<<"$out" || fail "the live file's process is not listed"
grep -q "qp 0x1234 RC RTS" <<<"$out" || fail "the live file's QP is not listed"
grep -Eq "SEND +5 +20480 " <<<"$out" || fail "the live QP's counters are not shown"
grep -q "/$badver: status format version $((1 + $(sed -n 's/^#define SVST_VERSION *\([0-9]*\).*/\1/p' \
  "$(dirname "$0")/../../src/status/format.h"))), this softverbs reads" <<<"$err" ||
  fail "the file of another format version was not refused by name"
grep -q "/$malformed: a malformed status file" <<<"$err" || fail "the malformed file was not refused"
for p in "$badver" "$malformed" "$dead"; do
  if grep -q "^pid $p " <<<"$out"; then fail "process $p listed"; fi
done
[[ ! -e $dir/$dead ]] || fail "the dead process's file was not removed"
[[ -e $dir/$live && -e $dir/$badver ]] || fail "a live process's file was removed"

timeout 20 "$sv" status --dir "$dir" --json >"$dir/.json" 2>/dev/null || fail "status --json failed"
python3 - "$live" "$dir/.json" <<'PY' || fail "status --json is wrong"
import json, sys
doc = json.load(open(sys.argv[2]))
procs = [p for p in doc["processes"] if p["pid"] == int(sys.argv[1])]
assert len(doc["processes"]) == 1 and procs, doc
qp = procs[0]["qps"][0]
assert qp["qpn"] == 0x1234 and qp["type"] == "RC" and qp["state"] == "RTS", qp
assert qp["counters"]["tx"]["SEND"] == {"msgs": 5, "bytes": 20480}, qp
PY
log "PASS"
