#!/usr/bin/env bash
# Shared helpers of the benchmark scripts; sourced by bench/run.sh, never run.
#
# Samples: every measurement appends one line to $BENCH_SAMPLES,
#   KEY <TAB> UNIT <TAB> ok|fail <TAB> VALUE-or-REASON
# with KEY = TOOL/WHERE/TEST/SIZE (e.g. sv/host/send_lat/8, ucx-posix/host/
# tag_bw/1048576, tcp/veth/lat/8).  report.sh takes the median of the ok
# values of each key.  Units: us (one-way latency unless the tool reports a
# round trip), MiB/s, Mpps, KiB, %, ms.
#
# Server/client pairs: set the arrays SRV and CLI, then
#   bench_pair NAME SERVER_NS CLIENT_NS PORT TIMEOUT
# (NS empty: this namespace).  The client's output is in $PAIR_OUT, the
# server's in $PAIR_SRV_OUT, and a failure's reason in $PAIR_ERR.  The
# logging, exit-status words and the pair runner are tests/pair-lib.sh's.
# Sourced: its variables are used by the other scripts.
# shellcheck disable=SC2034

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO=$(cd "$BENCH_DIR/.." && pwd -P)
BUILD=${BUILD_DIR:-build}
[[ $BUILD == /* ]] || BUILD=$REPO/$BUILD
SV_LIB=$BUILD/lib
BENCH_BIN=$BUILD/bench
SV_DEV=${SV_DEV:-softverbs0}

# Server and client of every pair on cores of their own (BENCH_PIN=0: as
# the scheduler likes): on two cores they would otherwise meet on one now
# and then, and a run's median would measure that.  Their threads (the
# progress thread too) share their process's core.
PIN_SRV=() PIN_CLI=()
if [[ ${BENCH_PIN:-1} == 1 ]] && (($(nproc) >= 2)) && command -v taskset >/dev/null; then
  PIN_SRV=(taskset -c 0) PIN_CLI=(taskset -c 1)
fi

: "${BENCH_WORK:=$(mktemp -d "${TMPDIR:-/tmp}/softverbs-bench.XXXXXX")}"
BENCH_SAMPLES=$BENCH_WORK/samples.tsv
mkdir -p "$BENCH_WORK/logs"
touch "$BENCH_SAMPLES"

# Time budget: everything not started by then is recorded as skipped.
: "${BENCH_START:=$(date +%s)}"
: "${BENCH_BUDGET:=540}"

# Namespaces of the two test hosts (netns.sh) and their addresses.
SVB_NS_A=svb-a
SVB_NS_B=svb-b
SVB_ADDR_A=10.78.0.1
SVB_ADDR_B=10.78.0.2
SVB_VETH_OK=0

# The repetition being run (run.sh sets it): log names carry it.
BENCH_REP=${BENCH_REP:-0}

# "[bench HH:MM:SS] MSG" on stderr.
PL_NAME=bench PL_LOG_TIME=1 PL_LOG_FD=2
# shellcheck source=tests/pair-lib.sh
. "$REPO/tests/pair-lib.sh"
bench_log() { pl_log "$@"; }

bench_budget_ok() {
  (( $(date +%s) - BENCH_START < BENCH_BUDGET ))
}

# --- samples ------------------------------------------------------------------

bench_rec() {  # KEY UNIT VALUE
  if [[ $3 =~ ^-?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]+)?$ ]]; then
    printf '%s\t%s\tok\t%s\n' "$1" "$2" "$3" >>"$BENCH_SAMPLES"
  else
    bench_fail "$1" "$2" "unparsable value '${3:0:40}'"
  fi
}

# The ratio of a run to its reference measured right before (report.sh
# takes the median of these pairs); nothing when either is missing.
bench_pair_rec() {  # KEY VALUE REFERENCE
  [[ -n $2 && -n $3 ]] || return 0
  bench_rec "$1" x "$(awk -v a="$2" -v b="$3" 'BEGIN { if (b > 0) printf "%.4f", a / b }')"
}

bench_fail() {  # KEY UNIT REASON
  local why=${3//$'\t'/ }
  why=${why//$'\n'/ | }
  printf '%s\t%s\tfail\t%s\n' "$1" "$2" "${why:0:300}" >>"$BENCH_SAMPLES"
  bench_log "FAIL $1: ${why:0:200}"
}

# Did KEY already time out (or was it skipped) in an earlier repetition?
# Then later repetitions do not wait for it again.
bench_gave_up() {
  awk -F'\t' -v k="$1" '$1 == k && $3 == "fail" && $4 ~ /timed out|skipped|not listening/ { f = 1 } END { exit !f }' \
    "$BENCH_SAMPLES"
}

# "name value" lines (the ref programs' output): the value of NAME.
bench_get() {  # FILE NAME
  awk -v n="$2" '$1 == n { v = $2 } END { if (v != "") print v }' "$1"
}

# The last line that looks like an error, for a failure's reason.
bench_why() {  # FILE
  local l
  l=$(grep -aiE 'error|fail|refused|unreachable|timeout|cannot|unable|denied|no such|not found|couldn|invalid|abort|segmentation' "$1" 2>/dev/null | tail -n 2 | tr -s ' \t' ' ')
  [[ -n $l ]] || l=$(grep -av '^[[:space:]-]*$' "$1" 2>/dev/null | tail -n 1 | tr -s ' \t' ' ')
  printf '%s' "${l:-no output}"
}

# timings.tsv: how long each run took (NAME SECONDS EXIT-CODE).
bench_timing() {  # NAME START RC
  awk -v n="$1" -v t0="$2" -v now="$(date +%s.%N)" -v rc="$3" \
    'BEGIN { printf "%s\t%.2f\t%s\n", n, now - t0, rc }' >>"$BENCH_WORK/timings.tsv"
}

# --- ports ----------------------------------------------------------------------

# Ports for out-of-band connections: one fresh port per run, below the
# kernel's ephemeral range (where softverbs' own ports, i.e. its QPNs, live).
: "${BENCH_PORT_NEXT:=${BENCH_PORT_BASE:-23100}}"
bench_next_port() {  # sets PORT
  local p=$BENCH_PORT_NEXT
  while ss -Htan "( sport = :$p or dport = :$p )" 2>/dev/null | grep -q .; do
    p=$((p + 1))
  done
  PORT=$p
  BENCH_PORT_NEXT=$((p + 1))
  ((BENCH_PORT_NEXT < 32000)) || BENCH_PORT_NEXT=${BENCH_PORT_BASE:-23100}
}

# --- namespaces -----------------------------------------------------------------

# NSW: the command prefix that runs a program as if on the test host NS:
# its network namespace, a private mount namespace with fresh tmpfs on
# /dev/shm and /tmp (the build directory stays visible if it is under /tmp).
bench_nswrap() {  # NS
  NSW=()
  [[ -n $1 ]] || return 0
  local keep=""
  [[ $BUILD == /tmp/* ]] && keep=$BUILD
  # shellcheck disable=SC2016
  NSW=(ip netns exec "$1" unshare -m --propagation private sh -c '
    set -e
    keep=$1; shift
    mount -t tmpfs -o mode=1777,size=25% svb-shm /dev/shm
    if [ -n "$keep" ]; then
      mkdir -p /dev/shm/.svb-keep && mount --bind "$keep" /dev/shm/.svb-keep
    fi
    mount -t tmpfs -o mode=1777 svb-tmp /tmp
    if [ -n "$keep" ]; then
      mkdir -p "$keep" && mount --move /dev/shm/.svb-keep "$keep" && rmdir /dev/shm/.svb-keep
    fi
    cd /
    exec "$@"
  ' svb-host "$keep")
}

bench_listening() {  # NS PORT
  if [[ -n $1 ]]; then
    ip netns exec "$1" ss -Hltn "sport = :$2" 2>/dev/null | grep -q .
  else
    ss -Hltn "sport = :$2" 2>/dev/null | grep -q .
  fi
}

# --- server/client pairs --------------------------------------------------------

# bench_pair: pl_pair with the servers and clients of the benchmarks: each
# in its test host (bench_nswrap), under timeout (the server 10 s longer);
# the client is not stopped early, the server has 3 s to end after it (the
# cmtime server never does).
bench_pair() {  # NAME SERVER_NS CLIENT_NS PORT TIMEOUT
  local name=r${BENCH_REP}_$1 sns=$2 cns=$3 port=$4 tmo=$5 t0
  PAIR_OUT=$BENCH_WORK/logs/$name.cli
  PAIR_SRV_OUT=$BENCH_WORK/logs/$name.srv
  PAIR_ERR=""
  PAIR_RC=0
  if ! bench_budget_ok; then
    PAIR_ERR="skipped: time budget (${BENCH_BUDGET}s) used up"
    PAIR_RC=125
    return 125
  fi
  t0=$(date +%s.%N)
  bench_nswrap "$sns"
  { echo "# ${NSW[*]:0:4} ${SRV[*]}"; } >"$PAIR_SRV_OUT"
  PL_SERVER=(timeout -k 2 $((tmo + 10)) "${NSW[@]}" "${PIN_SRV[@]}" "${SRV[@]}")
  bench_nswrap "$cns"
  { echo "# ${NSW[*]:0:4} ${CLI[*]}"; } >"$PAIR_OUT"
  PL_CLIENT=(timeout -k 2 "$tmo" "${NSW[@]}" "${PIN_CLI[@]}" "${CLI[@]}")
  PL_SERVER_LOG=$PAIR_SRV_OUT PL_CLIENT_LOG=$PAIR_OUT
  PL_LISTENING=(bench_listening "$sns" "$port") PL_LISTEN_WAIT=10
  PL_PEER_GRACE="" PL_SERVER_GRACE=3 PL_SERVER_LINGERS=1
  if ! pl_pair; then
    PAIR_ERR="server not listening on port $port: $(bench_why "$PAIR_SRV_OUT")"
    PAIR_RC=126
    bench_timing "$name" "$t0" 126
    return 126
  fi
  PAIR_RC=$PL_CRC
  bench_timing "$name" "$t0" "$PL_CRC"
  ((PL_CRC == 0)) || PAIR_ERR="client $(pl_exit_what "$PL_CRC" "$tmo"): $(bench_why "$PAIR_OUT")"
  return "$PL_CRC"
}

# Run one program (no server) with a timeout; output in $PAIR_OUT.
bench_one() {  # NAME TIMEOUT CMD...
  local name=r${BENCH_REP}_$1 tmo=$2 rc t0
  shift 2
  PAIR_OUT=$BENCH_WORK/logs/$name.out
  PAIR_ERR=""
  if ! bench_budget_ok; then
    PAIR_ERR="skipped: time budget (${BENCH_BUDGET}s) used up"
    return 125
  fi
  { echo "# $*"; } >"$PAIR_OUT"
  t0=$(date +%s.%N)
  timeout -k 2 "$tmo" "$@" >>"$PAIR_OUT" 2>&1 </dev/null
  rc=$?
  bench_timing "$name" "$t0" "$rc"
  ((rc == 0)) || PAIR_ERR="$(pl_exit_what "$rc" "$tmo"): $(bench_why "$PAIR_OUT")"
  return "$rc"
}

# --- parsers ------------------------------------------------------------------------

# perftest latency table: t_typical (the median) of the row for SIZE.
pt_lat() {  # FILE SIZE
  awk -v s="$2" '$1 == s && $2 ~ /^[0-9]+$/ && NF >= 6 { v = $5 } END { if (v != "") print v }' "$1"
}

# ... and its t_avg (the mean).
pt_lat_avg() {  # FILE SIZE
  awk -v s="$2" '$1 == s && $2 ~ /^[0-9]+$/ && NF >= 6 { v = $6 } END { if (v != "") print v }' "$1"
}

# perftest bandwidth table: BW average [MB/sec = MiB/s] or MsgRate [Mpps].
pt_bw() {  # FILE SIZE
  awk -v s="$2" '$1 == s && $2 ~ /^[0-9]+$/ && NF >= 5 { v = $4 } END { if (v != "") print v }' "$1"
}
pt_rate() {  # FILE SIZE
  awk -v s="$2" '$1 == s && $2 ~ /^[0-9]+$/ && NF >= 5 { v = $5 } END { if (v != "") print v }' "$1"
}

# ucx_perftest "Final:" row: iterations, latency 50%ile / average / overall
# [us], bandwidth average / overall [MB/s = MiB/s], msg rate average / overall.
ucx_field() {  # FILE lat|bw|rate
  awk -v f="$2" '$1 == "Final:" {
      if (f == "lat") v = $3; else if (f == "bw") v = $7; else v = $9 / 1e6 }
    END { if (v != "") print v }' "$1"
}

# fi_pingpong result row: usec/xfer (one-way, mean over the run).
fi_lat() {  # FILE
  awk '$1 ~ /^[0-9]+[kmg]?$/ && NF >= 8 && $2 ~ /^[0-9]/ { v = $7 } END { if (v != "") print v }' "$1"
}
