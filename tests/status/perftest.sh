#!/usr/bin/env bash
# perftest.sh BUILD PORT: while Debian's ib_send_bw runs as server and
# client on softverbs0 (duration mode), softverbs status lists both
# processes, each with an RC QP in RTS and non-zero message and byte
# counters, in its table and its JSON; softverbs stat -w 1 -n 2 shows
# non-zero rates for both.  Bidirectional (-b): a one-way server's QP
# stays in RTR.
set -euo pipefail
build=$1 port=$2
# shellcheck source=tests/compat/lib.sh
. "$(dirname "$0")/../compat/lib.sh" "$build" "$port"
sv=$SV_BUILD/bin/softverbs
prog=ib_send_bw
sv_need $prog
secs=12     # the run: long enough for the checks below on a loaded machine
# Duration mode ends on perftest's SIGALRM, whose handler calls fopen and
# spoils errno: TSan's reports of that are perftest's, not ours.
for i in "${!SV_ENV[@]}"; do
  if [[ ${SV_ENV[i]} == TSAN_OPTIONS=* ]]; then SV_ENV[i]+=" report_signal_unsafe=0"; fi
done

# run ROLE ARGS...: the program in the background as itself (env execs
# it: $! is its pid), stopped by a watchdog should it outlive its run.
declare -A pid=()
run() {
  local role=$1
  shift
  env "${SV_ENV[@]}" $prog -d "$SV_DEV" -p "$SV_PORT" -D "$secs" -F -b "$@" \
    >"$SV_TMP/$role.log" 2>&1 </dev/null &
  pid[$role]=$!
  (sleep $((secs + 40)); kill -9 "${pid[$role]}" 2>/dev/null) &
}

# checks_json FILE: both pids with an RC QP in RTS and traffic counted.
checks_json() {
  python3 - "$1" "${pid[server]}" "${pid[client]}" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
procs = {p["pid"]: p for p in doc["processes"]}
for pid in map(int, sys.argv[2:]):
    p = procs.get(pid)
    if not p:
        sys.exit("pid %d not listed" % pid)
    ok = [q for q in p["qps"] if q["type"] == "RC" and q["state"] == "RTS"]
    if not ok:
        sys.exit("pid %d has no RC QP in RTS: %s" % (pid, p["qps"]))
    msgs = sum(c["msgs"] for q in ok for d in ("tx", "rx") for c in q["counters"][d].values())
    data = sum(c["bytes"] for q in ok for d in ("tx", "rx") for c in q["counters"][d].values())
    if not msgs or not data:
        sys.exit("pid %d: no messages or bytes counted yet" % pid)
    print("pid %d (%s): RC QP %#x RTS, %d messages, %d bytes" %
          (pid, p["comm"], ok[0]["qpn"], msgs, data))
PY
}

attempt() {
  local i
  run server
  for ((i = 0; i < 300; i++)); do
    sv_port_listening "$SV_PORT" && break
    kill -0 "${pid[server]}" 2>/dev/null || { sv_show server "$SV_TMP/server.log"; return 1; }
    sleep 0.1
  done
  run client "$SV_HOST"
  # until both run with traffic counted (or one ends)
  for ((i = 0; i < 100; i++)); do
    timeout 20 "$sv" status --json >"$SV_TMP/status.json" || sv_fail "softverbs status --json failed"
    python3 -m json.tool "$SV_TMP/status.json" >/dev/null || sv_fail "status --json is not JSON"
    if checks_json "$SV_TMP/status.json" >"$SV_TMP/checks.out" 2>&1; then
      break
    fi
    kill -0 "${pid[server]}" 2>/dev/null && kill -0 "${pid[client]}" 2>/dev/null || return 1
    sleep 0.2
  done
  cat "$SV_TMP/checks.out"
  if ! checks_json "$SV_TMP/status.json" >/dev/null 2>&1; then
    sv_show "last status" <(timeout 20 "$sv" status)
    return 1
  fi

  timeout 20 "$sv" status >"$SV_TMP/status.txt" || sv_fail "softverbs status failed"
  local role
  for role in server client; do
    sv_show "status $role" <(grep -A12 "^pid ${pid[$role]} " "$SV_TMP/status.txt")
    grep -A3 "^pid ${pid[$role]} comm $prog " "$SV_TMP/status.txt" |
      grep -Eq '^  qp 0x[0-9a-f]+ RC RTS ' || sv_fail "the table lacks $role's RC QP in RTS"
  done

  timeout 30 "$sv" stat -w 1 -n 2 >"$SV_TMP/stat.txt" || sv_fail "softverbs stat -w 1 -n 2 failed"
  sv_show stat "$SV_TMP/stat.txt"
  [[ $(grep -c '^--- interval' "$SV_TMP/stat.txt") == 2 ]] || sv_fail "stat printed not 2 intervals"
  for role in server client; do
    awk -v p="${pid[$role]}" '$1 == "pid" && $2 == p {
        for (i = 3; i < NF; i++) if ($i == "msg/s" && $(i - 1) + 0 > 0) ok = 1 }
      END { exit !ok }' "$SV_TMP/stat.txt" || sv_fail "stat shows no rate for the $role (pid ${pid[$role]})"
  done
  return 0
}

ok=0
for ((try = 1; try <= 3; try++)); do
  if attempt; then ok=1; break; fi
  sv_show server "$SV_TMP/server.log"
  sv_show client "$SV_TMP/client.log"
  sv_log "the pair ended before status saw both with traffic; try $try of 3"
  kill "${pid[server]}" "${pid[client]}" 2>/dev/null || true
  wait "${pid[server]}" "${pid[client]}" 2>/dev/null || true
  SV_PORT=$(sv_free_port)
done
((ok)) || sv_fail "status never saw both $prog processes running with traffic"
# the pair goes on to its end; its result matters less than what status saw
wait "${pid[client]}" || sv_log "client exited $?"
wait "${pid[server]}" || sv_log "server exited $?"
sv_show client "$SV_TMP/client.log"
if sv_sanitizer_report "$SV_TMP/server.log" || sv_sanitizer_report "$SV_TMP/client.log"; then
  sv_fail "sanitizer report from $prog"
fi
sv_log "PASS"
