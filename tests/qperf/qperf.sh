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
# The server serves clients until it is stopped; it gets a moment to report
# a failure of the run it just served.
SV_SERVER_GRACE=0.2 SV_SERVER_LINGERS=1

# run LABEL ARGS...: one client run of TEST with ARGS against a fresh server.
run() {
  local label=$1 line
  shift
  sv_log "--- $label: qperf -lp $SV_PORT $* $SV_HOST $test"
  SV_SERVER=(qperf -lp "$SV_PORT")
  SV_CLIENT=(qperf -lp "$SV_PORT" "$@" "$SV_HOST" "$test")
  if ! sv_run_pair; then
    sv_show server "$SV_SLOG"
    failed+=("$label (the server did not listen)")
    return 0
  fi
  sv_show server "$SV_SLOG"
  sv_show client "$SV_CLOG"
  if sv_qperf_verdict "$test" "$SV_CRC" "$SV_SLOG" "$SV_CLOG"; then
    while IFS= read -r line; do echo "$label measured: $line"; done <<<"$SV_QPERF_FIGURES"
    sv_log "PASS: $label"
  else
    failed+=("$label ($SV_QPERF_WHY)")
    sv_log "FAIL: $label"
  fi
}

sv_need qperf
run "$test" -t 1
SV_PORT=$(sv_free_port)     # the first server's port may linger in TIME_WAIT
run "$test -cm1" -cm1 -t 1
((${#failed[@]} == 0)) || sv_fail "${failed[*]}"
sv_log "PASS: qperf $test, with and without -cm1"
