#!/usr/bin/env bash
# qperf.sh BUILD PORT TEST: Debian's unmodified qperf on softverbs0, server
# `qperf -lp PORT` and client `qperf -lp PORT -t 1 127.0.0.1 TEST`, first with
# qperf's own connection setup, then with -cm1 (rdma_cm).  Each run gets a
# fresh server, so one run's failure cannot spoil the next; each is judged on
# its own (the client exits 0 and prints its figures, the server complains
# of nothing), and the test fails at the end if either failed.
set -euo pipefail
build=$1 port=$2 test=$3
# shellcheck source=tests/compat/lib.sh
. "$(dirname "$0")/../compat/lib.sh" "$build" "$port"
# shellcheck source=tests/qperf-checks.sh
. "$(dirname "$0")/../qperf-checks.sh"

failed=()

# run LABEL ARGS...: one client run of TEST with ARGS against a fresh server.
run() {
  local label=$1 rc=0 waited=0 figures line slog=$SV_TMP/server.log clog=$SV_TMP/client.log
  shift
  sv_log "--- $label: qperf -lp $SV_PORT $* $SV_HOST $test"
  timeout -k 5 "$SV_TIMEOUT" env "${SV_ENV[@]}" qperf -lp "$SV_PORT" >"$slog" 2>&1 </dev/null &
  SV_SERVER_PID=$!
  while ! sv_port_listening "$SV_PORT"; do
    if ! kill -0 "$SV_SERVER_PID" 2>/dev/null || ((waited >= SV_LISTEN_WAIT * 10)); then
      sv_show server "$slog"
      failed+=("$label (the server did not listen)")
      return 0
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  timeout -k 5 "$SV_TIMEOUT" env "${SV_ENV[@]}" \
    qperf -lp "$SV_PORT" "$@" "$SV_HOST" "$test" >"$clog" 2>&1 </dev/null || rc=$?
  # The server serves clients until it is stopped; give it a moment to
  # report a failure of the run it just served.
  sleep 0.2
  kill -TERM "$SV_SERVER_PID" 2>/dev/null || true
  wait "$SV_SERVER_PID" 2>/dev/null || true
  SV_SERVER_PID=
  sv_show server "$slog"
  sv_show client "$clog"
  if ! sv_status client "$rc"; then
    failed+=("$label (client status $rc)")
  elif sv_sanitizer_report "$slog" || sv_sanitizer_report "$clog"; then
    failed+=("$label (sanitizer report)")
  elif ! sv_qperf_server_quiet "$slog"; then
    failed+=("$label (the server reported a failure)")
  elif ! figures=$(sv_qperf_figures "$test" "$clog"); then
    failed+=("$label (no figures, or an error in the client's output)")
  else
    while IFS= read -r line; do echo "$label measured: $line"; done <<<"$figures"
    sv_log "PASS: $label"
    return 0
  fi
  sv_log "FAIL: $label"
}

sv_need qperf
run "$test" -t 1
SV_PORT=$(sv_free_port)     # the first server's port may linger in TIME_WAIT
run "$test -cm1" -cm1 -t 1
((${#failed[@]} == 0)) || sv_fail "${failed[*]}"
sv_log "PASS: qperf $test, with and without -cm1"
