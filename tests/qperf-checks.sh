# shellcheck shell=bash
# How the tests judge a run of Debian's qperf, on one host (tests/qperf/) and
# across hosts (tests/net/, case qperf).  Nothing here depends on how the
# pair was run: each function reads logs (and uses tests/pair-lib.sh's
# verdict helpers, which both callers have sourced).

# sv_qperf_figures TEST LOG: did the client report TEST and at least one
# figure ("latency  =  5.3 us", "bw  =  11 GB/sec", "msg_rate  =  14 K/sec";
# qperf groups thousands: "bw  =  1,000 MB/sec"), and nothing qperf counts
# as an error?  Prints the figures.
sv_qperf_figures() {
  local test=$1 log=$2
  grep -q "^$test:" "$log" || return 1
  if grep -Eiq 'failed|error|expecting|timed out' "$log"; then
    return 1
  fi
  grep -E '^ +[a-z_]+ += +[0-9][0-9.,]* ' "$log" | sed 's/^ *//; s/  */ /g' | grep . || return 1
}

# sv_qperf_verdict TEST CLIENT_STATUS SERVER_LOG CLIENT_LOG: the verdict on
# one run: the client exited 0, no sanitizer report, a quiet server, and
# the client's figures (then in SV_QPERF_FIGURES).  False with the reason in
# SV_QPERF_WHY.
# shellcheck disable=SC2034  # SV_QPERF_FIGURES and _WHY are for the caller
sv_qperf_verdict() {
  local test=$1 crc=$2 slog=$3 clog=$4
  SV_QPERF_WHY=
  if ! pl_status client "$crc"; then
    SV_QPERF_WHY="client status $crc"
  elif pl_sanitizer_report "$slog" || pl_sanitizer_report "$clog"; then
    SV_QPERF_WHY="sanitizer report"
  elif ! sv_qperf_server_quiet "$slog"; then
    SV_QPERF_WHY="the server reported a failure"
  elif ! SV_QPERF_FIGURES=$(sv_qperf_figures "$test" "$clog"); then
    SV_QPERF_WHY="no figures, or an error in the client's output"
  fi
  [[ -z $SV_QPERF_WHY ]]
}

# sv_qperf_server_quiet LOG: a qperf server prints nothing unless something
# went wrong ("server: failed to receive synchronization after test").
sv_qperf_server_quiet() {
  ! grep -Eiq 'failed|error|expecting|timed out' "$1"
}
