# shellcheck shell=bash
# How the tests judge a pair of Debian's perftest programs, on one host
# (tests/compat/perftest.sh) and across hosts (tests/net/, svn_perftest).
# Nothing here depends on how the pair was run: each function reads logs.

# sv_perftest_table LOG: did the program print its result table, a "#bytes"
# header followed by a row of numbers?  Prints the header and the first row.
sv_perftest_table() {
  awk '/^ *#bytes/ { hdr = 1; print; next } hdr && /^ *[0-9]/ { print; ok = 1; exit }
       END { exit !ok }' "$1"
}

# How often such a failure is retried: they come in bursts on a loaded
# machine (the -R race below lost 4 of 25 runs under two busy loops, and 3
# in a row once in a full ASan run of `make test`).
# shellcheck disable=SC2034  # used by the scripts that source this one
SV_PERFTEST_RETRIES=4

# sv_perftest_flake SERVER_LOG CLIENT_LOG ARGS...: is the failure of a pair
# run with ARGS one of those that say nothing about softverbs' results and
# are retried (SV_PERFTEST_RETRIES times at most)?  Prints which.  Both
# happen when the machine is very loaded:
#  - perftest's own CPU clock sampling fails ("Correlation coefficient r^2
#    < 0.9 ... Can't produce a report");
#  - with -R, the client's connection is sometimes rejected
#    (RDMA_CM_EVENT_REJECTED, status 8: "no listener"), and the client then
#    dies of SIGSEGV (status 139).  That is perftest's own race: after the
#    handshake on its first rdma_cm connection, the server creates, binds and
#    listens on a new id for the test's QPs while the client already
#    connects; a connection that comes first is refused, as an IB CM answers
#    a REQ for a service nobody listens on.  perftest means to retry (up to
#    10 times, 100 ms apart), but the retry crashes in rdma_resolve_addr on
#    an id pointer whose bytes are a sockaddr_in (the server's address and
#    port): memory perftest freed and reused (compare linux-rdma/perftest
#    issue 93, "connect retry fails").  Delaying the server's second
#    rdma_listen by 300 ms (an LD_PRELOAD shim) reproduces it every time.
sv_perftest_flake() {
  local slog=$1 clog=$2
  shift 2
  if grep -q "Can't produce a report" "$slog" "$clog"; then
    echo "perftest could not sample its CPU clock (machine loaded)"
  elif [[ " $* " == *" -R "* ]] && grep -q 'RDMA_CM_EVENT_REJECTED' "$clog"; then
    echo "KNOWN ISSUE: rdma_cm connection rejected (status 8) under load"
  else
    return 1
  fi
}
