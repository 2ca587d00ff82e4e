# shellcheck shell=bash
# How the tests judge a run of Debian's qperf, on one host (tests/qperf/) and
# across hosts (tests/net/, case qperf).  Nothing here depends on how the
# pair was run: each function reads logs.

# sv_qperf_figures TEST LOG: did the client report TEST and at least one
# figure ("latency  =  5.3 us", "bw  =  11 GB/sec", "msg_rate  =  14 K/sec"),
# and nothing qperf counts as an error?  Prints the figures.
sv_qperf_figures() {
  local test=$1 log=$2
  grep -q "^$test:" "$log" || return 1
  if grep -Eiq 'failed|error|expecting|timed out' "$log"; then
    return 1
  fi
  grep -E '^ +[a-z_]+ += +[0-9.]+ ' "$log" | sed 's/^ *//; s/  */ /g' | grep . || return 1
}

# sv_qperf_server_quiet LOG: a qperf server prints nothing unless something
# went wrong ("server: failed to receive synchronization after test").
sv_qperf_server_quiet() {
  ! grep -Eiq 'failed|error|expecting|timed out' "$1"
}
