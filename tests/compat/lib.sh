# shellcheck shell=bash
# Shared logic of the compat tests (and tools/demo.sh): run Debian's unmodified
# RDMA programs against softverbs, server and client as separate processes on
# 127.0.0.1, each under `timeout`, so nothing ever hangs.
#
# Use from a script that has `set -euo pipefail`:
#   . "$(dirname "$0")/lib.sh" BUILD_DIR [PORT]
#   sv_pair ibv_rc_pingpong -n 1000 -e     # server: PROG -p PORT ARGS
#                                          # client: PROG -p PORT ARGS 127.0.0.1
#   sv_single ibv_devinfo -v               # one program; its output in $SV_OUT
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
SV_SERVER_PID=
SV_CLIENT_PID=
SV_NAME=$(basename "${0%.sh}")

sv_log() { printf '[%s] %s\n' "$SV_NAME" "$*"; }
sv_fail() { printf '[%s] FAIL: %s\n' "$SV_NAME" "$*" >&2; exit 1; }
sv_skip() { printf '[%s] SKIP: %s\n' "$SV_NAME" "$*"; exit 77; }

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
sv_port_listening() {
  local hex
  hex=$(printf '%04X' "$1")
  awk -v hex="$hex" 'FNR > 1 && $4 == "0A" { split($2, a, ":"); if (a[2] == hex) { found = 1; exit } }
                     END { exit !found }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

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

SV_BUILD=${1:-${SOFTVERBS_BUILD_DIR:-}}
[[ -n $SV_BUILD ]] || sv_fail "usage: $0 BUILD_DIR [PORT]"
[[ -d $SV_BUILD ]] || sv_fail "build directory $SV_BUILD does not exist"
SV_BUILD=$(cd "$SV_BUILD" && pwd -P)
SV_LIB=$SV_BUILD/lib
[[ -e $SV_LIB/libibverbs.so.1 ]] ||
  sv_fail "$SV_LIB/libibverbs.so.1 is missing: build softverbs first (make)"

SV_PORT=${2:-}
if [[ -z $SV_PORT ]]; then
  SV_PORT=$(sv_free_port)
elif sv_port_busy "$SV_PORT"; then
  sv_log "TCP port $SV_PORT is in use; taking another"
  SV_PORT=$(sv_free_port)
fi

# SV_ENV: what every program under test runs with (tests/run-env.sh).
# shellcheck source=tests/run-env.sh
. "$(dirname "${BASH_SOURCE[0]}")/../run-env.sh"
sv_run_env "$SV_BUILD" || sv_fail "cannot set up the environment for $SV_BUILD"
SV_ENV=("${SV_RUN_ENV[@]}")
# shellcheck source=tests/perftest-checks.sh
. "$(dirname "${BASH_SOURCE[0]}")/../perftest-checks.sh"

SV_TMP=$(mktemp -d "${TMPDIR:-/tmp}/softverbs-$SV_NAME.XXXXXX")

sv_cleanup() {
  local pid
  for pid in $SV_SERVER_PID $SV_CLIENT_PID; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    fi
  done
  rm -rf "$SV_TMP"
}
trap sv_cleanup EXIT
trap 'exit 143' TERM INT HUP

# --- running programs --------------------------------------------------------

# Skip the test when Debian's program $1 is not installed (scripts/deps.sh
# installs it), and make sure it really loads our libibverbs.
sv_need() {
  local path deps lib resolved
  path=$(command -v "$1") || sv_skip "$1 is not installed (scripts/deps.sh installs it)"
  deps=$(env "LD_LIBRARY_PATH=$SV_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$path" 2>/dev/null || true)
  for lib in libibverbs.so.1 librdmacm.so.1; do
    # librdmacm only when the program uses it and this build has one.
    [[ $lib == libibverbs.so.1 || -e $SV_LIB/$lib ]] || continue
    [[ $lib == libibverbs.so.1 ]] || grep -q "^[[:space:]]*$lib " <<<"$deps" || continue
    resolved=$(awk -v lib="$lib" '$1 == lib { print $3 }' <<<"$deps")
    [[ $resolved == "$SV_LIB/$lib" ]] ||
      sv_fail "$1 loads $lib from '${resolved:-nowhere}', not from $SV_LIB"
  done
}

# Print log file $2 with prefix $1.
sv_show() {
  sed "s/^/$1| /" "$2"
}

# Explain exit code $2 of program $1; returns non-zero when it is a failure.
sv_status() {
  case $2 in
    0) return 0 ;;
    124|137) sv_log "$1 timed out (after ${SV_TIMEOUT}s)" ;;
    143) sv_log "$1 was stopped (SIGTERM)" ;;
    *) sv_log "$1 exited with status $2" ;;
  esac
  return 1
}

# Did a sanitizer report anything in log $1?
sv_sanitizer_report() {
  grep -Eq 'ERROR: [A-Za-z]*Sanitizer|WARNING: ThreadSanitizer|runtime error:|SUMMARY: [A-Za-z]*Sanitizer' "$1"
}

# sv_check KIND ROLE LOG: does the output show what the program measured?
#   pingpong: "N bytes in T seconds" (and the iters line is printed with it)
#   perftest: perftest's result table: a "#bytes" header and a row of numbers
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
  timeout -k 5 "$SV_TIMEOUT" env "${SV_ENV[@]}" "$@" >"$SV_OUT" 2>&1 </dev/null || rc=$?
  sv_show "$1" "$SV_OUT"
  sv_status "$1" "$rc" || sv_fail "$*"
  if sv_sanitizer_report "$SV_OUT"; then sv_fail "sanitizer report from $1"; fi
}

# sv_pair [--client-check KIND] [--server-check KIND] PROG ARGS...
# Server `PROG -p PORT ARGS`, then, once it listens, client
# `PROG -p PORT ARGS 127.0.0.1`.  Both must exit 0 and pass their check
# (default: pingpong).  The server is stopped if the client fails, the client
# SV_PEER_GRACE seconds after the server failed.
sv_pair() {
  local ccheck=pingpong scheck=pingpong prog slog clog waited=0 src=0 crc=0 ok=1
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
  slog=$SV_TMP/server.log
  clog=$SV_TMP/client.log
  local server=("$prog" -p "$SV_PORT" "$@")
  local client=("$prog" -p "$SV_PORT" "$@" "$SV_HOST")

  sv_log "server: ${server[*]}"
  timeout -k 5 "$SV_TIMEOUT" env "${SV_ENV[@]}" "${server[@]}" >"$slog" 2>&1 </dev/null &
  SV_SERVER_PID=$!

  # Wait until the server listens (it does so only after opening the device).
  while ! sv_port_listening "$SV_PORT"; do
    if ! kill -0 "$SV_SERVER_PID" 2>/dev/null; then
      wait "$SV_SERVER_PID" || src=$?
      SV_SERVER_PID=
      sv_show server "$slog"
      sv_status server "$src" || true
      sv_fail "server exited before listening on port $SV_PORT"
    fi
    if ((waited >= SV_LISTEN_WAIT * 10)); then
      sv_show server "$slog"
      sv_fail "server did not listen on port $SV_PORT within ${SV_LISTEN_WAIT}s"
    fi
    sleep 0.1
    waited=$((waited + 1))
  done

  sv_log "client: ${client[*]}"
  timeout -k 5 "$SV_TIMEOUT" env "${SV_ENV[@]}" "${client[@]}" >"$clog" 2>&1 </dev/null &
  SV_CLIENT_PID=$!

  # While the client runs: should the server fail, the client has
  # SV_PEER_GRACE seconds to notice before it is stopped (rather than
  # letting it spin until its timeout).
  waited=0
  while kill -0 "$SV_CLIENT_PID" 2>/dev/null; do
    if [[ -n $SV_SERVER_PID ]] && ! kill -0 "$SV_SERVER_PID" 2>/dev/null; then
      wait "$SV_SERVER_PID" || src=$?
      SV_SERVER_PID=
    fi
    if [[ -z $SV_SERVER_PID ]] && ((src != 0)); then
      if ((waited >= SV_PEER_GRACE * 10)); then
        sv_log "server failed; stopping the client ${SV_PEER_GRACE}s later"
        kill -TERM "$SV_CLIENT_PID" 2>/dev/null || true
        break
      fi
      waited=$((waited + 1))
    fi
    sleep 0.1
  done
  wait "$SV_CLIENT_PID" || crc=$?
  SV_CLIENT_PID=

  if [[ -n $SV_SERVER_PID ]]; then
    if ((crc != 0)); then
      # The client failed: the server would wait for it forever.
      kill -TERM "$SV_SERVER_PID" 2>/dev/null || true
    else
      # Give the server a moment to finish its side, then stop waiting.
      waited=0
      while kill -0 "$SV_SERVER_PID" 2>/dev/null && ((waited < SV_PEER_GRACE * 10)); do
        sleep 0.1
        waited=$((waited + 1))
      done
      if kill -0 "$SV_SERVER_PID" 2>/dev/null; then
        sv_log "server still running ${SV_PEER_GRACE}s after the client finished; stopping it"
        kill -TERM "$SV_SERVER_PID" 2>/dev/null || true
      fi
    fi
    wait "$SV_SERVER_PID" || src=$?
    SV_SERVER_PID=
  fi

  sv_show server "$slog"
  sv_show client "$clog"
  sv_status server "$src" || ok=0
  sv_status client "$crc" || ok=0
  if sv_sanitizer_report "$slog"; then sv_log "sanitizer report from the server"; ok=0; fi
  if sv_sanitizer_report "$clog"; then sv_log "sanitizer report from the client"; ok=0; fi
  if ((ok)); then
    sv_check "$scheck" server "$slog" || ok=0
    sv_check "$ccheck" client "$clog" || ok=0
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
