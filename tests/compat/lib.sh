# shellcheck shell=bash
# Shared logic of the compat tests (and tools/demo.sh): run Debian's unmodified
# RDMA programs against softverbs, server and client as separate processes on
# 127.0.0.1, each under tests/watchdog.sh (a `timeout` that prints a hung
# program's stacks), so nothing ever hangs.
#
# Use from a script that has `set -euo pipefail`:
#   . "$(dirname "$0")/lib.sh" BUILD_DIR [PORT]
#   sv_pair ibv_rc_pingpong -n 1000 -e     # server: PROG -p PORT ARGS
#                                          # client: PROG -p PORT ARGS 127.0.0.1
#   sv_single ibv_devinfo -v               # one program; its output in $SV_OUT
# Logging, exit statuses and the pair runner are tests/pair-lib.sh's.
#
# BUILD_DIR is the CMake build directory (${CMAKE_BINARY_DIR}); its lib/ goes
# first in LD_LIBRARY_PATH.  When that build is sanitized (SANITIZE in its
# CMakeCache.txt, or $SOFTVERBS_SANITIZE), the sanitizer runtime is preloaded
# into the uninstrumented Debian programs, with leak detection off for them.
# PORT is the TCP port the programs exchange their addresses on; without one,
# or when it is taken, a free port is chosen.
#
# Knobs (environment):
#   SOFTVERBS_TEST_TIMEOUT  seconds each program may run (default 60)
#   SOFTVERBS_TEST_LISTEN   seconds to wait for a server to listen (default 30)
#   SOFTVERBS_TEST_PEER_GRACE  seconds one side may go on after the other one
#                           ended (default 15; then it is stopped)
# Exit codes: 0 pass, 1 fail, 77 skip (a program is not installed).

SV_HOST=127.0.0.1
SV_DEV=softverbs0
SV_TIMEOUT=${SOFTVERBS_TEST_TIMEOUT:-60}
SV_LISTEN_WAIT=${SOFTVERBS_TEST_LISTEN:-30}
SV_PEER_GRACE=${SOFTVERBS_TEST_PEER_GRACE:-15}  # seconds one side may take to finish after the other
SV_OUT=                  # output file of the last sv_single
SV_SERVER=()             # sv_run_pair's programs
SV_CLIENT=()
SV_NAME=$(basename "${0%.sh}")

PL_NAME=$SV_NAME PL_TIMEOUT=$SV_TIMEOUT
# shellcheck source=tests/pair-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../pair-lib.sh"
sv_log() { pl_log "$@"; }
sv_fail() { pl_fail "$@"; }
sv_skip() { pl_skip "$@"; }

# --- ports -----------------------------------------------------------------

# Is TCP port $1 (IPv4 or IPv6) in use by a socket other than one in
# TIME_WAIT (the programs bind with SO_REUSEADDR)?
sv_port_busy() {
  local hex
  hex=$(printf '%04X' "$1")
  awk -v hex="$hex" 'FNR > 1 && $4 != "06" { split($2, a, ":"); if (a[2] == hex) { found = 1; exit } }
                     END { exit !found }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# Is a socket listening on TCP port $1?
sv_port_listening() { pl_port_listening "$1"; }

# Print a TCP port that nothing uses now (below the usual ephemeral range).
sv_free_port() {
  local p i
  for ((i = 0; i < 200; i++)); do
    p=$((20000 + RANDOM % 12000))
    if ! sv_port_busy "$p"; then echo "$p"; return 0; fi
  done
  sv_fail "found no free TCP port"
}

# --- environment -------------------------------------------------------------

# SV_ENV: what every program under test runs with (pl_build).
pl_build "${1:-${SOFTVERBS_BUILD_DIR:-}}" "$0 BUILD_DIR [PORT]"
# shellcheck disable=SC2034  # SV_BUILD: for the scripts that source this
SV_BUILD=$PL_BUILD SV_LIB=$PL_LIB SV_ENV=("${PL_ENV[@]}")

SV_PORT=${2:-}
if [[ -z $SV_PORT ]]; then
  SV_PORT=$(sv_free_port)
elif sv_port_busy "$SV_PORT"; then
  sv_log "TCP port $SV_PORT is in use; taking another"
  SV_PORT=$(sv_free_port)
fi

# shellcheck source=tests/perftest-checks.sh
. "$(dirname "${BASH_SOURCE[0]}")/../perftest-checks.sh"

SV_TMP=$(mktemp -d "${TMPDIR:-/tmp}/softverbs-$SV_NAME.XXXXXX")

sv_cleanup() {
  pl_stop TERM
  rm -rf "$SV_TMP"
}
trap sv_cleanup EXIT
trap 'exit 143' TERM INT HUP

# --- running programs --------------------------------------------------------

# Skip the test when Debian's program $1 is not installed (scripts/deps.sh
# installs it), and make sure it really loads our libibverbs.
sv_need() { pl_need "$1" "$SV_LIB"; }

# Print log file $2 with prefix $1.
sv_show() { pl_show "$@"; }

# Explain exit code $2 of program $1; returns non-zero when it is a failure.
sv_status() { pl_status "$@"; }

# Did a sanitizer report anything in log $1?
sv_sanitizer_report() { pl_sanitizer_report "$1"; }

# sv_check KIND ROLE LOG: does the output show what the program measured?
#   pingpong: "N bytes in T seconds" (and the iters line is printed with it)
#   perftest: perftest's result table: a "#bytes" header and a row of numbers
#   success:  a line "success" (ibv_xsrq_pingpong's report)
#   exit:     nothing beyond the exit status
sv_check() {
  local kind=$1 role=$2 log=$3 table line
  case $kind in
    pingpong)
      if ! grep -Eq '^[0-9]+ bytes in [0-9.]+ seconds' "$log"; then
        sv_log "$role printed no 'bytes in ... seconds' line"; return 1
      fi
      grep -E '^[0-9]+ (bytes|iters) in [0-9.]+ seconds' "$log" | sed "s/^/$role measured: /" ;;
    perftest)
      if ! table=$(sv_perftest_table "$log"); then
        sv_log "$role printed no result table"; return 1
      fi
      while IFS= read -r line; do echo "$role measured: $line"; done <<<"$table" ;;
    success)
      if ! grep -q '^success$' "$log"; then
        sv_log "$role printed no 'success' line"; return 1
      fi ;;
    exit) ;;
    *) sv_fail "sv_check: unknown kind $kind" ;;
  esac
}

# sv_single PROG ARGS...: run one program under timeout, show its output,
# fail unless it exits 0.  Its output stays in $SV_OUT for further checks.
sv_single() {
  local rc=0
  sv_need "$1"
  SV_OUT=$SV_TMP/$1.out
  sv_log "run: $*"
  "$PL_WATCHDOG" "$SV_TIMEOUT" env "${SV_ENV[@]}" "$@" >"$SV_OUT" 2>&1 </dev/null || rc=$?
  sv_show "$1" "$SV_OUT"
  sv_status "$1" "$rc" || sv_fail "$*"
  if sv_sanitizer_report "$SV_OUT"; then sv_fail "sanitizer report from $1"; fi
}

# sv_run_pair: server ${SV_SERVER[@]}, then, once it listens on SV_PORT,
# client ${SV_CLIENT[@]}, each under timeout with SV_ENV, output in
# $SV_TMP/server.log and client.log ($SV_SLOG, $SV_CLOG) (pl_pair).  Should
# the server fail, the client is stopped SV_PEER_GRACE seconds later.  After
# a successful client the server has SV_SERVER_GRACE seconds (default
# SV_PEER_GRACE) to end, then it is stopped (with a note, unless
# SV_SERVER_LINGERS=1: it serves until stopped).  Sets SV_SRC and SV_CRC;
# false, with the reason in PL_ERR, when the server did not listen.
sv_run_pair() {
  SV_SLOG=$SV_TMP/server.log SV_CLOG=$SV_TMP/client.log
  : >"$SV_SLOG"
  : >"$SV_CLOG"
  PL_SERVER=("$PL_WATCHDOG" "$SV_TIMEOUT" env "${SV_ENV[@]}" "${SV_SERVER[@]}")
  PL_CLIENT=("$PL_WATCHDOG" "$SV_TIMEOUT" env "${SV_ENV[@]}" "${SV_CLIENT[@]}")
  PL_SERVER_LOG=$SV_SLOG PL_CLIENT_LOG=$SV_CLOG
  PL_SERVER_NOTE="server: ${SV_SERVER[*]}" PL_CLIENT_NOTE="client: ${SV_CLIENT[*]}"
  PL_LISTENING=(pl_port_listening "$SV_PORT") PL_LISTEN_WAIT=$SV_LISTEN_WAIT
  PL_PEER_GRACE=$SV_PEER_GRACE PL_SERVER_GRACE=${SV_SERVER_GRACE:-$SV_PEER_GRACE}
  PL_SERVER_LINGERS=${SV_SERVER_LINGERS:-0}
  pl_pair || return 1
  SV_SRC=$PL_SRC SV_CRC=$PL_CRC
}

# sv_pair [--client-check KIND] [--server-check KIND] PROG ARGS...
# Server `PROG -p PORT ARGS`, then, once it listens, client
# `PROG -p PORT ARGS 127.0.0.1` (sv_run_pair).  Both must exit 0 and pass
# their check (default: pingpong).
sv_pair() {
  local ccheck=pingpong scheck=pingpong prog ok=1
  while [[ $# -gt 0 ]]; do
    case $1 in
      --client-check) ccheck=$2; shift 2 ;;
      --server-check) scheck=$2; shift 2 ;;
      --check) ccheck=$2; scheck=$2; shift 2 ;;
      *) break ;;
    esac
  done
  prog=$1; shift
  sv_need "$prog"
  SV_SERVER=("$prog" -p "$SV_PORT" "$@")
  SV_CLIENT=("$prog" -p "$SV_PORT" "$@" "$SV_HOST")
  if ! sv_run_pair; then
    sv_show server "$SV_SLOG"
    sv_status server "$PL_SRC" || true
    sv_fail "$PL_ERR on port $SV_PORT"
  fi

  sv_show server "$SV_SLOG"
  sv_show client "$SV_CLOG"
  sv_status server "$SV_SRC" || ok=0
  sv_status client "$SV_CRC" || ok=0
  if sv_sanitizer_report "$SV_SLOG"; then sv_log "sanitizer report from the server"; ok=0; fi
  if sv_sanitizer_report "$SV_CLOG"; then sv_log "sanitizer report from the client"; ok=0; fi
  if ((ok)); then
    sv_check "$scheck" server "$SV_SLOG" || ok=0
    sv_check "$ccheck" client "$SV_CLOG" || ok=0
  fi
  ((ok)) || sv_fail "$prog $*"
  sv_log "PASS: $prog $*"
}

# sv_perftest PROG ARGS...: a perftest pair in its default mode on our device,
# a short run; the client must print its result table.
sv_perftest() {
  local prog=$1; shift
  sv_pair --server-check exit --client-check perftest "$prog" -d "$SV_DEV" -n 100 "$@"
}

# sv_perftest_retried PROG ARGS...: sv_perftest, retried (SV_PERFTEST_RETRIES
# times at most, on a fresh port) when it fails in a way that says nothing
# about softverbs (perftest-checks.sh, sv_perftest_flake); they come in
# bursts on a loaded machine.  Any other failure fails at once.  A caller
# whose pair leaves files behind defines sv_perftest_before_retry.
sv_perftest_retried() {
  local prog=$1 why try
  shift
  for ((try = 1; try <= SV_PERFTEST_RETRIES; try++)); do
    if (sv_perftest "$prog" "$@"); then
      SV_SLOG=$SV_TMP/server.log SV_CLOG=$SV_TMP/client.log   # (set in the subshell)
      return 0
    fi
    why=$(sv_perftest_flake "$SV_TMP/server.log" "$SV_TMP/client.log" "$@") ||
      sv_fail "$prog $* failed"
    sv_log "$why; retry $try of $SV_PERFTEST_RETRIES"
    SV_PORT=$(sv_free_port)
    if declare -F sv_perftest_before_retry >/dev/null; then sv_perftest_before_retry; fi
  done
  sv_perftest "$prog" "$@"
}
