# shellcheck shell=bash
# Shared logic of the cross-host tests: Debian's unmodified RDMA programs run
# against softverbs in two test hosts (network namespaces joined by veth,
# hosts.sh), server in h1 (10.77.0.1), client in h2 (10.77.0.2), each under
# tests/watchdog.sh (a `timeout` that prints a hung program's stacks).
#
# Use from a script that has `set -euo pipefail`:
#   . "$(dirname "$0")/lib.sh" BUILD_DIR
#   svn_hosts_up                           # this test's own pair of hosts
#   SVN_SERVER=(ibv_rc_pingpong -n 1000)
#   SVN_CLIENT=(ibv_rc_pingpong -n 1000 10.77.0.1)
#   svn_pair 18515                         # both exit 0, print "bytes in"
#   svn_perftest ib_send_bw -R             # a perftest pair; more may follow
#   svn_perftest_done                      # fails if any of them failed
# Logging, exit statuses and the pair runner are tests/pair-lib.sh's.
#
# Each test gets its own pair of hosts, named after the test's PID
# (sv-p<PID>-h1/h2), so tests can run side by side and a pair left behind by
# a test that was killed is removed by the next `hosts.sh up` (gc).
#
# Knobs (environment):
#   SOFTVERBS_TEST_TIMEOUT  seconds each program may run (default 60)
#   SOFTVERBS_TEST_LISTEN   seconds to wait for a server to listen (default 30)
#   SOFTVERBS_TEST_PEER_GRACE  seconds one side may go on after the other one
#                           ended (default 15)
# Exit codes: 0 pass, 1 fail, 77 skip (not root, no netns, program missing).

SVN_H1=10.77.0.1
SVN_H2=10.77.0.2
SVN_TIMEOUT=${SOFTVERBS_TEST_TIMEOUT:-60}
SVN_LISTEN_WAIT=${SOFTVERBS_TEST_LISTEN:-30}
SVN_PEER_GRACE=${SOFTVERBS_TEST_PEER_GRACE:-15}
SVN_NAME=${SVN_NAME:-$(basename "${0%.sh}")}
SVN_HOSTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/hosts.sh
SVN_ID=p$$
SVN_UP=0
SVN_SERVER=()
SVN_CLIENT=()
SVN_SERVER_EXPECT=()     # extended regexes the server's output must match
SVN_CLIENT_EXPECT=()
SVN_CLIENT_CHECK=()      # a command that must accept the client's log (its
                         # last argument); what it prints is shown
SVN_EXTRA_ENV=()         # more VAR=value for both programs
declare -A SVN_LOG=()    # role -> its output (PL_PID: role -> its pid)

PL_NAME=$SVN_NAME PL_TIMEOUT=$SVN_TIMEOUT
# shellcheck source=tests/pair-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../pair-lib.sh"
svn_log() { pl_log "$@"; }
svn_fail() { pl_fail "$@"; }
svn_skip() { pl_skip "$@"; }

# --- environment -------------------------------------------------------------

# What every program runs with: our lib/ first, the sanitizer runtime of a
# sanitized build preloaded, line-buffered output (pl_build).
pl_build "${1:-${SOFTVERBS_BUILD_DIR:-}}" "$0 BUILD_DIR"
SVN_BUILD=$PL_BUILD SVN_LIB=$PL_LIB SVN_ENV=("${PL_ENV[@]}")
# The fresh /tmp of a host keeps the library directory and our programs
# (softverbs, the security tests) visible (read-only), for a build in /tmp.
export SOFTVERBS_HOSTS_KEEP=$SVN_LIB:$SVN_BUILD/bin:$SVN_BUILD/tests/security
export SOFTVERBS_HOSTS_ID=$SVN_ID

# shellcheck source=tests/perftest-checks.sh
. "$(dirname "${BASH_SOURCE[0]}")/../perftest-checks.sh"

SVN_TMP=$(mktemp -d "${TMPDIR:-/tmp}/softverbs-net-$SVN_NAME.XXXXXX")

# Kill whatever program still runs.
svn_stop() { pl_stop KILL; }

svn_cleanup() {
  svn_stop
  if ((SVN_UP)); then
    "$SVN_HOSTS" down || true
  fi
  rm -rf "$SVN_TMP"
}
trap svn_cleanup EXIT
trap 'exit 143' TERM INT HUP

# --- hosts ---------------------------------------------------------------------

# Create this test's pair of hosts (skip when that is impossible here).
svn_hosts_up() {
  local rc=0
  "$SVN_HOSTS" up || rc=$?
  ((rc != 77)) || svn_skip "cannot create test hosts here (see above)"
  ((rc == 0)) || svn_fail "hosts.sh up failed"
  SVN_UP=1
  svn_log "hosts: $("$SVN_HOSTS" ns h1) ($SVN_H1), $("$SVN_HOSTS" ns h2) ($SVN_H2)"
}

# Skip when Debian's program $1 is missing; fail when it would not load our
# libraries.
svn_need() { pl_need "$1" "$SVN_LIB"; }

# --- programs ------------------------------------------------------------------

# svn_cmd HOST PROG ARGS...: the command that runs PROG in HOST under
# timeout, with our environment (in SVN_CMD).
svn_cmd() {
  local host=$1
  shift
  SVN_CMD=("$SVN_HOSTS" exec "$host" "$PL_WATCHDOG" "$SVN_TIMEOUT"
           env "${SVN_ENV[@]}" "${SVN_EXTRA_ENV[@]}" "$@")
}

# svn_start ROLE HOST PROG ARGS...: run PROG in HOST in the background,
# under timeout, output in ${SVN_LOG[ROLE]}; ${PL_PID[ROLE]} is the pid of
# its watchdog (hosts.sh execs all the way down), whose first child is PROG.
svn_start() {
  local role=$1 host=$2
  shift 2
  svn_need "$1"
  SVN_LOG[$role]=$SVN_TMP/$role.log
  : >"${SVN_LOG[$role]}"
  svn_log "$role in $host: $*"
  svn_cmd "$host" "$@"
  pl_start "$role" "${SVN_LOG[$role]}" "${SVN_CMD[@]}"
}

# The program's own pid (first child of its watchdog), empty if it is not running.
svn_prog_pid() {
  local t=${PL_PID[$1]:-} c
  [[ -n $t ]] || return 0
  c=$(cat "/proc/$t/task/$t/children" 2>/dev/null || true)
  echo "${c%% *}"
}

# Is ROLE's program running?
svn_running() { pl_running "$1"; }

# svn_wait ROLE: wait for ROLE to end; sets SVN_RC.
svn_wait() {
  pl_wait "$1"
  SVN_RC=$PL_RC
}

# svn_listening ROLE PORT: does ROLE's program listen on TCP PORT (in its
# own network namespace, seen through /proc/PID/net)?
svn_listening() { pl_port_listening "$2" "${PL_PID[$1]}"; }

# svn_wait_listen ROLE PORT: wait until ROLE's program listens on TCP PORT.
svn_wait_listen() {
  PL_LISTENING=(svn_listening "$1" "$2") PL_LISTEN_WAIT=$SVN_LISTEN_WAIT
  if ! pl_wait_listening "$1"; then
    svn_show "$1"
    svn_status "$1" "$PL_RC" || true
    svn_fail "$PL_ERR on port $2"
  fi
}

# svn_wait_output ROLE REGEX SECS: wait until ROLE printed a line matching
# REGEX; false if it did not within SECS or ended first.
svn_wait_output() {
  local role=$1 re=$2 waited=0
  while ! grep -Eq "$re" "${SVN_LOG[$role]}"; do
    svn_running "$role" || { grep -Eq "$re" "${SVN_LOG[$role]}"; return; }
    ((waited < $3 * 10)) || return 1
    sleep 0.1
    waited=$((waited + 1))
  done
}

svn_show() { pl_show "$1" "${SVN_LOG[$1]}"; }

# Explain exit code $2 of ROLE $1; false when it is a failure.
svn_status() { pl_status "$@"; }

svn_sanitizer_report() { pl_sanitizer_report "$1"; }

# svn_expect ROLE REGEX...: ROLE's output matches every REGEX.
svn_expect() {
  local role=$1 re ok=0
  shift
  for re in "$@"; do
    [[ -n $re ]] || continue          # "": the exit status is all that counts
    if grep -Eq -- "$re" "${SVN_LOG[$role]}"; then
      grep -E -- "$re" "${SVN_LOG[$role]}" | tail -n 2 | sed "s/^/$role printed: /"
    else
      svn_log "$role printed no line matching '$re'"; ok=1
    fi
  done
  return $ok
}

SVN_PINGPONG='^[0-9]+ bytes in [0-9.]+ seconds'

# svn_run_pair PORT: server ${SVN_SERVER[@]} in h1, once it listens on TCP
# PORT the client ${SVN_CLIENT[@]} in h2 (pl_pair: should the server fail,
# the client is stopped SVN_PEER_GRACE seconds later; the server has
# SVN_SERVER_GRACE seconds, default SVN_PEER_GRACE, to end after the client,
# SVN_SERVER_LINGERS=1 when it serves until stopped).  Fails the test when
# the server does not listen; sets SVN_SRC and SVN_CRC.
svn_run_pair() {
  local port=$1
  svn_need "${SVN_SERVER[0]}"
  svn_need "${SVN_CLIENT[0]}"
  SVN_LOG[server]=$SVN_TMP/server.log SVN_LOG[client]=$SVN_TMP/client.log
  : >"${SVN_LOG[server]}"
  : >"${SVN_LOG[client]}"
  svn_cmd h1 "${SVN_SERVER[@]}"
  PL_SERVER=("${SVN_CMD[@]}")
  svn_cmd h2 "${SVN_CLIENT[@]}"
  PL_CLIENT=("${SVN_CMD[@]}")
  PL_SERVER_LOG=${SVN_LOG[server]} PL_CLIENT_LOG=${SVN_LOG[client]}
  PL_SERVER_NOTE="server in h1: ${SVN_SERVER[*]}" PL_CLIENT_NOTE="client in h2: ${SVN_CLIENT[*]}"
  PL_LISTENING=(svn_listening server "$port") PL_LISTEN_WAIT=$SVN_LISTEN_WAIT
  PL_PEER_GRACE=$SVN_PEER_GRACE PL_SERVER_GRACE=${SVN_SERVER_GRACE:-$SVN_PEER_GRACE}
  PL_SERVER_LINGERS=${SVN_SERVER_LINGERS:-0}
  if ! pl_pair; then
    svn_show server
    svn_status server "$PL_SRC" || true
    svn_fail "$PL_ERR on port $port"
  fi
  SVN_SRC=$PL_SRC SVN_CRC=$PL_CRC
}

# svn_pair PORT: svn_run_pair; both must exit 0 and print what
# SVN_SERVER_EXPECT / SVN_CLIENT_EXPECT ask for (default: the pingpong
# "bytes in ... seconds" line); the client's output must pass
# SVN_CLIENT_CHECK, if set.
svn_pair() {
  local port=$1 ok=1 out
  ((${#SVN_SERVER_EXPECT[@]})) || SVN_SERVER_EXPECT=("$SVN_PINGPONG")
  ((${#SVN_CLIENT_EXPECT[@]})) || SVN_CLIENT_EXPECT=("$SVN_PINGPONG")
  svn_run_pair "$port"

  svn_show server
  svn_show client
  svn_status server "$SVN_SRC" || ok=0
  svn_status client "$SVN_CRC" || ok=0
  if svn_sanitizer_report "${SVN_LOG[server]}"; then svn_log "sanitizer report from the server"; ok=0; fi
  if svn_sanitizer_report "${SVN_LOG[client]}"; then svn_log "sanitizer report from the client"; ok=0; fi
  svn_expect server "${SVN_SERVER_EXPECT[@]}" || ok=0
  svn_expect client "${SVN_CLIENT_EXPECT[@]}" || ok=0
  if ((${#SVN_CLIENT_CHECK[@]})); then
    if out=$("${SVN_CLIENT_CHECK[@]}" "${SVN_LOG[client]}"); then
      printf '%s\n' "$out" | sed 's/^/client measured: /'
    else
      svn_log "the client's output fails the check '${SVN_CLIENT_CHECK[*]}'"; ok=0
    fi
  fi
  ((ok)) || svn_fail "server: ${SVN_SERVER[*]}; client: ${SVN_CLIENT[*]}"
  svn_log "PASS: server: ${SVN_SERVER[*]}; client: ${SVN_CLIENT[*]}"
}

# svn_failure_run PORT HOW: a long ibv_rc_pingpong transfer; 1 s after it
# started, HOW = kill (SIGKILL the server) or link (take h1's link down).  The
# client must then complete its outstanding work with an error status
# ("Failed status ...") and exit within SVN_FAIL_WITHIN seconds.
SVN_FAIL_WITHIN=${SOFTVERBS_TEST_FAIL_WITHIN:-15}
svn_failure_run() {
  local port=$1 how=$2 t0 t1 crc sp waited=0 ok=1 st
  SVN_SERVER=(ibv_rc_pingpong -p "$port" -n 1000000)
  SVN_CLIENT=(ibv_rc_pingpong -p "$port" -n 1000000 "$SVN_H1")
  svn_start server h1 "${SVN_SERVER[@]}"
  svn_wait_listen server "$port"
  svn_start client h2 "${SVN_CLIENT[@]}"
  # Both print their addresses once connected, then the transfer runs.
  if ! svn_wait_output client '^ *remote address' 30 || ! svn_wait_output server '^ *remote address' 30; then
    svn_show server; svn_show client
    svn_fail "the transfer did not start"
  fi
  sleep 1
  if ! svn_running client || ! svn_running server; then
    svn_show server; svn_show client
    svn_fail "the transfer ended before the failure was injected (1 s after it started)"
  fi
  case $how in
    kill)
      sp=$(svn_prog_pid server)
      [[ -n $sp ]] || svn_fail "cannot find the server's pid"
      svn_log "killing the server (pid $sp in h1) with SIGKILL"
      kill -KILL "$sp" ;;
    link)
      svn_log "taking h1's link down"
      "$SVN_HOSTS" kill-link h1 ;;
  esac
  t0=$(date +%s.%N)
  while svn_running client && ((waited < SVN_FAIL_WITHIN * 10)); do
    sleep 0.1
    waited=$((waited + 1))
  done
  t1=$(date +%s.%N)
  if svn_running client; then
    svn_log "the client still runs ${SVN_FAIL_WITHIN}s after the failure; stopping it"
    ok=0
    kill -KILL "$(svn_prog_pid client)" 2>/dev/null || true
  fi
  svn_wait client; crc=$SVN_RC
  svn_log "client exited with status $crc $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s after the failure"
  if [[ $how == link ]]; then
    # The server loses its peer too (information only: with nothing but
    # receives outstanding, a QP has nothing to time out).
    waited=0
    while svn_running server && ((waited < 50)); do
      sleep 0.1
      waited=$((waited + 1))
    done
    if svn_running server; then
      svn_log "note: the server still runs 5 s after the link went down; stopping it"
      kill -KILL "$(svn_prog_pid server)" 2>/dev/null || true
    fi
    "$SVN_HOSTS" link-up h1 || true
  fi
  svn_wait server; st=$SVN_RC
  svn_log "server exited with status $st"
  svn_show server
  svn_show client
  if ((crc == 0)); then
    svn_log "the client exited 0: it should have failed"; ok=0
  fi
  if ((crc == 124 || crc == 137)); then
    svn_log "the client had to be killed"; ok=0
  fi
  svn_expect client '^Failed status .*\([0-9]+\)' || ok=0
  if ! grep -q 'Failed status transport retry counter exceeded (12)' "${SVN_LOG[client]}"; then
    svn_log "note: the client's error is not RETRY_EXC_ERR (12)"
  fi
  if svn_sanitizer_report "${SVN_LOG[client]}"; then svn_log "sanitizer report from the client"; ok=0; fi
  ((ok)) || svn_fail "ibv_rc_pingpong after the server's $how"
  svn_log "PASS: the client failed cleanly after the server's $how"
}

# --- perftest ------------------------------------------------------------------

# svn_perftest PROG ARGS...: one pair of Debian's perftest PROG, a short run
# on our device: server `PROG -d softverbs0 -p PORT -n 100 ARGS` in h1, client
# the same plus 10.77.0.1 in h2 (a -n in ARGS wins: perftest takes the last).
# Every run, and a retry, takes the next port from 18515 on.  Both must exit
# 0, the client must print its result table (sv_perftest_table), with -a down
# to the 8 MiB row.  A failure that says nothing about softverbs
# (sv_perftest_flake) is retried, SV_PERFTEST_RETRIES times at most.  Unlike svn_pair, a failure does not
# end the test: it is logged ("FAIL: ...") and counted, and the next run
# goes on; svn_perftest_done ends the series.
SVN_PERFTEST_PORT=18515
SVN_PERFTEST_RUNS=0
SVN_PERFTEST_FAILED=()
SVN_PERFTEST_RETRIED=()

svn_perftest() {
  local try port why=
  svn_need "$1"
  SVN_PERFTEST_RUNS=$((SVN_PERFTEST_RUNS + 1))
  for ((try = 1; try <= SV_PERFTEST_RETRIES + 1; try++)); do
    svn_log "--- perftest run $SVN_PERFTEST_RUNS${why:+ (retry)}: $*"
    port=$SVN_PERFTEST_PORT
    SVN_PERFTEST_PORT=$((port + 1))
    if svn_perftest_pair "$port" "$@"; then
      return 0
    fi
    ((try <= SV_PERFTEST_RETRIES)) || break
    # svn_start's logs, left by the subshell
    why=$(sv_perftest_flake "$SVN_TMP/server.log" "$SVN_TMP/client.log" "$@") || break
    svn_log "$why; retry $try of $SV_PERFTEST_RETRIES"
    SVN_PERFTEST_RETRIED+=("$* ($why)")
  done
  SVN_PERFTEST_FAILED+=("$*")
}

# svn_perftest_pair PORT PROG ARGS...: svn_pair in a subshell, whose exit
# (svn_fail) ends only this run; it stops the programs it leaves behind.
svn_perftest_pair() (
  local port=$1 prog=$2
  shift 2
  trap svn_stop EXIT
  trap 'exit 143' TERM INT HUP
  SVN_SERVER=("$prog" -d softverbs0 -p "$port" -n 100 "$@")
  SVN_CLIENT=("${SVN_SERVER[@]}" "$SVN_H1")
  SVN_SERVER_EXPECT=('')
  SVN_CLIENT_EXPECT=('')
  [[ " $* " != *" -a "* ]] || SVN_CLIENT_EXPECT=('^ *8388608 ')
  SVN_CLIENT_CHECK=(sv_perftest_table)
  svn_pair "$port"
)

# svn_perftest_done: after a series of svn_perftest, fail if any run failed.
svn_perftest_done() {
  local r
  for r in "${SVN_PERFTEST_RETRIED[@]}"; do svn_log "retried once: $r"; done
  for r in "${SVN_PERFTEST_FAILED[@]}"; do svn_log "failed: $r"; done
  ((${#SVN_PERFTEST_FAILED[@]} == 0)) ||
    svn_fail "${#SVN_PERFTEST_FAILED[@]} of $SVN_PERFTEST_RUNS perftest runs failed"
  svn_log "PASS: all $SVN_PERFTEST_RUNS perftest runs"
}
