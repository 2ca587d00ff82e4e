# shellcheck shell=bash
# What the scripts that run a server and a client program share: the compat
# tests (tests/compat/lib.sh, on 127.0.0.1), the cross-host tests
# (tests/net/lib.sh, in two network namespaces) and the benchmarks
# (bench/lib.sh).  Each of those sources this file and keeps its own
# function names (sv_*, svn_*, bench_*) as its scripts' interface.
#
#   pl_log / pl_fail / pl_skip MSG   "[PL_NAME] MSG"; fail exits 1, skip 77
#   pl_status WHO RC                 explain an exit status; false unless 0
#   pl_build BUILD_DIR USAGE         the build under test and its environment
#   pl_pair                          run a server and a client, reap both
#
# Works with and without `set -euo pipefail`.
# Its results (PL_RC, PL_SRC, PL_CRC, PL_ERR) are read by the callers.
# shellcheck disable=SC2034

PL_NAME=${PL_NAME:-$(basename "${0%.sh}")}
PL_LOG_TIME=${PL_LOG_TIME:-0}      # 1: "[NAME HH:MM:SS] MSG"
PL_LOG_FD=${PL_LOG_FD:-1}          # where pl_log writes (pl_fail: stderr)
declare -gA PL_PID=([server]="" [client]="")  # role -> pid of its timeout (watchdog)
# `timeout -k 5 SECS` that first prints a hung program's thread stacks
PL_WATCHDOG=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/watchdog.sh

# --- logging and verdicts ------------------------------------------------------

pl_log() {
  local tag=$PL_NAME
  ((PL_LOG_TIME)) && tag+=" $(date +%T)"
  printf '[%s] %s\n' "$tag" "$*" >&"$PL_LOG_FD"
}
pl_fail() { printf '[%s] FAIL: %s\n' "$PL_NAME" "$*" >&2; exit 1; }
pl_skip() { printf '[%s] SKIP: %s\n' "$PL_NAME" "$*"; exit 77; }

# Print file $2 with prefix $1.
pl_show() { sed "s/^/$1| /" "$2"; }

# pl_exit_what RC [SECS]: what exit status RC of a program run under
# `timeout SECS` means, in words (nothing for 0).
pl_exit_what() {
  case $1 in
    0) ;;
    124|137) echo "timed out${2:+ after ${2}s} or was killed (status $1)" ;;
    143) echo "was stopped (SIGTERM)" ;;
    *) echo "exited with status $1" ;;
  esac
}

# pl_status WHO RC: log what exit status RC of WHO means; false unless 0.
pl_status() {
  (($2 == 0)) && return 0
  pl_log "$1 $(pl_exit_what "$2" "${PL_TIMEOUT:-}")"
  return 1
}

# Did a sanitizer report anything in log $1?
pl_sanitizer_report() {
  grep -Eq 'ERROR: [A-Za-z]*Sanitizer|WARNING: ThreadSanitizer|runtime error:|SUMMARY: [A-Za-z]*Sanitizer' "$1"
}

# pl_need PROG LIBDIR: skip when PROG is not installed; fail when it would
# load libibverbs or librdmacm from anywhere but LIBDIR (our own programs
# find it through their RUNPATH, bin/../lib).
pl_need() {
  local path deps lib resolved
  path=$(command -v "$1") || pl_skip "$1 is not installed (scripts/deps.sh installs it)"
  deps=$(env "LD_LIBRARY_PATH=$2${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$path" 2>/dev/null || true)
  for lib in libibverbs.so.1 librdmacm.so.1; do
    grep -q "^[[:space:]]*$lib " <<<"$deps" || continue
    [[ -e $2/$lib ]] || pl_fail "$1 needs $lib, which this build does not have"
    resolved=$(awk -v lib="$lib" '$1 == lib { print $3 }' <<<"$deps")
    [[ -z $resolved ]] || resolved=$(realpath -ms "$resolved")
    [[ $resolved == "$2/$lib" ]] ||
      pl_fail "$1 loads $lib from '${resolved:-nowhere}', not from $2"
  done
}

# pl_build BUILD_DIR USAGE: check the build directory (fail with "usage:
# USAGE" when it is empty); set PL_BUILD (absolute), PL_LIB (its lib/) and
# PL_ENV (array): what every program under test runs with: our lib/ first,
# the sanitizer runtime of a sanitized build preloaded, line-buffered output
# (tests/run-env.sh).
pl_build() {
  [[ -n $1 ]] || pl_fail "usage: $2"
  [[ -d $1 ]] || pl_fail "build directory $1 does not exist"
  PL_BUILD=$(cd "$1" && pwd -P)
  PL_LIB=$PL_BUILD/lib
  [[ -e $PL_LIB/libibverbs.so.1 ]] ||
    pl_fail "$PL_LIB/libibverbs.so.1 is missing: build softverbs first (make)"
  # shellcheck source=tests/run-env.sh
  . "$(dirname "${BASH_SOURCE[0]}")/run-env.sh"
  sv_run_env "$PL_BUILD" ||
    pl_fail "cannot find the sanitizer runtime of the $SV_RUN_SANITIZE build in $PL_BUILD"
  PL_ENV=("${SV_RUN_ENV[@]}")
}

# pl_port_listening PORT [PID]: is a socket listening on TCP PORT in the
# network namespace of PID (default: ours)?
pl_port_listening() {
  local hex
  hex=$(printf '%04X' "$1")
  awk -v hex="$hex" 'FNR > 1 && $4 == "0A" { split($2, a, ":"); if (a[2] == hex) { f = 1; exit } }
                     END { exit !f }' "/proc/${2:-self}/net/tcp" "/proc/${2:-self}/net/tcp6" 2>/dev/null
}

# --- programs by role ------------------------------------------------------------

# pl_start ROLE LOG CMD...: run CMD in the background, output appended to LOG.
pl_start() {
  local role=$1 log=$2
  shift 2
  "$@" >>"$log" 2>&1 </dev/null &
  PL_PID[$role]=$!
}

# Is ROLE's program running?
pl_running() {
  local pid=${PL_PID[$1]:-}
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null
}

# pl_wait ROLE: wait for ROLE to end; sets PL_RC.
pl_wait() {
  PL_RC=0
  [[ -n ${PL_PID[$1]:-} ]] || return 0
  # (bash's "Killed" job notice goes to the braces' stderr)
  { wait "${PL_PID[$1]}" || PL_RC=$?; } 2>/dev/null
  PL_PID[$1]=
}

# pl_end ROLE: stop ROLE (SIGTERM, SIGKILL 10 s later) and wait for it; sets PL_RC.
pl_end() {
  local end
  if pl_running "$1"; then
    kill -TERM "${PL_PID[$1]}" 2>/dev/null || true
    pl_after end 10
    while pl_running "$1" && ! pl_passed "$end"; do sleep 0.1; done
    if pl_running "$1"; then kill -KILL "${PL_PID[$1]}" 2>/dev/null || true; fi
  fi
  pl_wait "$1"
}

# pl_stop [SIGNAL]: for an exit trap: signal (default TERM) whatever still
# runs, and wait for it.
pl_stop() {
  local role
  for role in "${!PL_PID[@]}"; do
    if pl_running "$role"; then
      kill "-${1:-TERM}" "${PL_PID[$role]}" 2>/dev/null || true
      pl_wait "$role"
    fi
  done
}

# pl_after VAR SECS: set VAR to the clock (microseconds) SECS from now (a
# decimal fraction allowed); pl_passed CLOCK: is it past that?  Deadlines,
# not counted polls: on a loaded machine a poll takes longer than its sleep.
pl_after() {
  local int=${2%%.*} frac=000000
  if [[ $2 == *.* ]]; then frac=${2#*.}000000; fi
  printf -v "$1" '%d' $((${EPOCHREALTIME//[!0-9]/} + ${int:-0} * 1000000 + 10#${frac:0:6}))
}
pl_passed() { ((${EPOCHREALTIME//[!0-9]/} >= $1)); }

# pl_wait_listening ROLE: wait (PL_LISTEN_WAIT seconds, default 30) until
# the command PL_LISTENING (array) succeeds.  False, with ROLE reaped (its
# status in PL_RC) and PL_ERR saying why, when ROLE ended first or the time
# ran out (then it is stopped).
pl_wait_listening() {
  local end wait_s=${PL_LISTEN_WAIT:-30}
  PL_RC=0 PL_ERR=
  pl_after end "$wait_s"
  until "${PL_LISTENING[@]}"; do
    if ! pl_running "$1"; then
      pl_wait "$1"
      PL_ERR="$1 exited before listening"
      return 1
    fi
    if pl_passed "$end"; then
      pl_end "$1"
      PL_ERR="$1 did not listen within ${wait_s}s"
      return 1
    fi
    sleep 0.05
  done
}

# --- the pair ----------------------------------------------------------------------

# pl_pair: run the server PL_SERVER (array: the whole command, under
# `timeout`), output appended to PL_SERVER_LOG; once PL_LISTENING (array: a
# command; PL_PID[server] is set by then) succeeds, the client PL_CLIENT, to
# PL_CLIENT_LOG.  PL_SERVER_NOTE and PL_CLIENT_NOTE, when set, are logged
# just before each starts.  Knobs, in seconds:
#   PL_LISTEN_WAIT   for the server to listen (default 30)
#   PL_PEER_GRACE    the client may go on after the server failed, then it
#                    is stopped (empty: until it ends by itself)
#   PL_SERVER_GRACE  the server may go on after the client succeeded, then
#                    it is stopped (default 15; with a note unless
#                    PL_SERVER_LINGERS=1: it serves until stopped); a failed
#                    client's server is stopped at once
# Sets PL_SRC and PL_CRC, the two exit statuses, and PL_ERR: empty, or why
# the client never ran.  Returns 1 when it did not, else 0.
pl_pair() {
  local end=""
  PL_SRC=0 PL_CRC=0 PL_ERR=
  [[ -z ${PL_SERVER_NOTE:-} ]] || pl_log "$PL_SERVER_NOTE"
  pl_start server "$PL_SERVER_LOG" "${PL_SERVER[@]}"
  if ! pl_wait_listening server; then
    PL_SRC=$PL_RC
    return 1
  fi

  [[ -z ${PL_CLIENT_NOTE:-} ]] || pl_log "$PL_CLIENT_NOTE"
  pl_start client "$PL_CLIENT_LOG" "${PL_CLIENT[@]}"
  if [[ -n ${PL_PEER_GRACE:-} ]]; then
    # Should the server fail, the client has PL_PEER_GRACE seconds to notice
    # (rather than spinning until its timeout).
    end=
    while pl_running client; do
      if [[ -n ${PL_PID[server]} ]] && ! pl_running server; then
        pl_wait server; PL_SRC=$PL_RC
        if ((PL_SRC != 0)); then pl_after end "$PL_PEER_GRACE"; fi
      fi
      if [[ -n $end ]] && pl_passed "$end"; then
        pl_log "server failed; stopping the client ${PL_PEER_GRACE}s later"
        kill -TERM "${PL_PID[client]}" 2>/dev/null || true
        break
      fi
      sleep 0.1
    done
  fi
  pl_wait client; PL_CRC=$PL_RC

  if [[ -n ${PL_PID[server]} ]]; then
    if ((PL_CRC == 0)); then
      pl_after end "${PL_SERVER_GRACE:-15}"
      while pl_running server && ! pl_passed "$end"; do sleep 0.05; done
      if pl_running server && ! ((${PL_SERVER_LINGERS:-0})); then
        pl_log "server still running ${PL_SERVER_GRACE:-15}s after the client finished; stopping it"
      fi
    fi
    # (a failed client: the server would wait for it forever)
    pl_end server; PL_SRC=$PL_RC
  fi
  return 0
}
