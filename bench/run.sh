#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# softverbs benchmarks: softverbs and its references in one run on the same
# machine, so that the ratios hold even on a noisy machine.
#
#   bench/run.sh [--reps N] [--budget SECONDS] [--quick] [--no-veth] [--results DIR]
#                [--against BUILD]
#
#   --reps N       repetitions of every measurement (default 3, BENCH_REPS);
#                  repetitions are interleaved: each one runs every tool once
#   --budget S     stop starting measurements after S seconds (default 540,
#                  BENCH_BUDGET); what was not run is reported as skipped
#   --quick        1 repetition, fewer sizes, 3 s idle: a smoke test
#   --no-veth      skip the two-namespace (veth) measurements
#   --results DIR  where <YYYY-MM-DD>.md (appended to) and .png go
#                  (default bench/results)
#   --against B    also measure the build directory B (another commit's:
#                  its lib/), each perftest run right after this build's,
#                  and report old against new (BENCH_AGAINST)
#
# Needs the build (make: build/lib and build/bench), perftest, ucx-utils,
# libfabric-bin, rdmacm-utils, iproute2, util-linux and gnuplot-nox; the
# veth part needs root.  See bench/README.md.
set -uo pipefail

BENCH_REPS=${BENCH_REPS:-3}
BENCH_BUDGET=${BENCH_BUDGET:-540}
BENCH_LAT_SIZES=${BENCH_LAT_SIZES:-8 64 4096 65536}
BENCH_BW_SIZES=${BENCH_BW_SIZES:-8 64 4096 65536 1048576}
BENCH_STREAM_SIZES=${BENCH_STREAM_SIZES:-4096 65536 1048576}
results=""
want_veth=1

usage() { sed -n '2,23s/^# \{0,1\}//p' "$0"; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --reps) BENCH_REPS=$2; shift 2 ;;
    --budget) BENCH_BUDGET=$2; shift 2 ;;
    --quick)
      BENCH_REPS=1 BENCH_LAT_SIZES="8 4096" BENCH_BW_SIZES="8 65536 1048576"
      BENCH_STREAM_SIZES="65536 1048576" BENCH_IDLE_SECONDS=${BENCH_IDLE_SECONDS:-3}
      shift ;;
    --no-veth) want_veth=0; shift ;;
    --results) results=$2; shift 2 ;;
    --against) BENCH_AGAINST=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
[[ $BENCH_REPS =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --reps wants a positive number" >&2; exit 2; }

here=$(cd "$(dirname "$0")" && pwd -P)
BENCH_START=$(date +%s)
# shellcheck source=lib.sh
. "$here/lib.sh"
# shellcheck source=netns.sh
. "$here/netns.sh"
# shellcheck source=machine.sh
. "$here/machine.sh"
# shellcheck source=peers.sh
. "$here/peers.sh"
# shellcheck source=perftest.sh
. "$here/perftest.sh"
# shellcheck source=consumers.sh
. "$here/consumers.sh"
# shellcheck source=rsockets.sh
. "$here/rsockets.sh"
# shellcheck source=scale.sh
. "$here/scale.sh"
# shellcheck source=report.sh
. "$here/report.sh"
results=${results:-$BENCH_DIR/results}

# One run at a time on this machine: two would measure each other.
lockdir=/run/lock
[[ -w $lockdir ]] || lockdir=${TMPDIR:-/tmp}
exec 9>"$lockdir/softverbs-bench.lock"
if ! flock -w 5 9; then
  echo "run.sh: another benchmark run holds $lockdir/softverbs-bench.lock" >&2
  exit 1
fi

BENCH_AGAINST=${BENCH_AGAINST:-}
if [[ -n $BENCH_AGAINST && ! -e $BENCH_AGAINST/lib/libibverbs.so.1 ]]; then
  echo "run.sh: --against $BENCH_AGAINST: no lib/libibverbs.so.1 there" >&2
  exit 2
fi

missing=()
for p in memcpy_bw pvm shm_pingpong tcp_ref qp_scale; do
  [[ -x $BENCH_BIN/$p ]] || missing+=("$p")
done
if [[ ! -e $SV_LIB/libibverbs.so.1 || ${#missing[@]} -gt 0 ]]; then
  echo "run.sh: the build is incomplete (${missing[*]:-$SV_LIB/libibverbs.so.1} missing in $BUILD): run make first" >&2
  exit 1
fi
for p in ib_send_lat ucx_perftest fi_pingpong cmtime gnuplot; do
  command -v "$p" >/dev/null ||
    bench_log "note: $p not found; its measurements will be reported as failed (see bench/README.md for the packages)"
done

# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  local j
  for j in $(jobs -p); do kill -TERM "$j" 2>/dev/null; done
  bench_netns_down 2>/dev/null
}
trap cleanup EXIT
trap 'bench_log "interrupted"; exit 130' INT TERM

BENCH_LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
bench_log "softverbs benchmark: $BENCH_REPS repetition(s), budget ${BENCH_BUDGET}s, logs in $BENCH_WORK"
bench_log "machine: $(bench_machine_desc); load average $BENCH_LOAD_START"

BENCH_VETH_RAN=0
if ((want_veth)); then
  if bench_netns_up; then
    BENCH_VETH_RAN=1
  else
    bench_log "veth measurements skipped: $SVB_VETH_WHY"
  fi
else
  SVB_VETH_WHY="disabled (--no-veth)"
fi

BENCH_REPS_DONE=0
rep_secs=0
for ((rep = 1; rep <= BENCH_REPS; rep++)); do
  # A repetition starts only if one more fits in the budget (as long as the
  # first one took): complete repetitions keep the comparison fair.
  if (( $(date +%s) - BENCH_START + rep_secs > BENCH_BUDGET )); then
    bench_log "time budget (${BENCH_BUDGET}s): repetition $rep and later not run (one takes ${rep_secs}s)"
    break
  fi
  rep_t0=$(date +%s)
  BENCH_REP=$rep
  bench_log "repetition $rep/$BENCH_REPS: machine limits"
  fam_machine
  bench_log "repetition $rep/$BENCH_REPS: UCX and libfabric"
  fam_peers
  bench_log "repetition $rep/$BENCH_REPS: softverbs perftest, same host"
  fam_sv host
  fam_consumers
  fam_rsockets host
  if [[ $SVB_VETH_OK == 1 ]]; then
    bench_log "repetition $rep/$BENCH_REPS: TCP and softverbs across veth"
    fam_tcp_veth
    peer_ucx tcp tag_bw 8 veth     # the veth message-rate targets' reference
    fam_sv veth
    fam_rsockets veth
  fi
  BENCH_REPS_DONE=$rep
  ((rep == 1)) && rep_secs=$(( $(date +%s) - rep_t0 ))
  if ((rep == 1)); then
    # Once, early, so that the time budget never skips it.
    bench_log "scale (QPs, cmtime) and idle cost"
    BENCH_REP=once BENCH_BUDGET=$((BENCH_BUDGET + 180)) fam_scale
  fi
done
bench_netns_down

bench_medians
day=$(date +%F)
mkdir -p "$results"
md=$results/$day.md
png=$results/$day.png
bench_report "$BENCH_WORK/report.md"
if [[ ! -s $md ]]; then
  {
    echo "# softverbs benchmarks, $day"
    echo
    echo "Written by \`make bench\` (bench/run.sh); each run appends a section."
    echo "The plot \`$day.png\` is the latest run's."
    echo
  } >"$md"
else
  printf '\n---\n\n' >>"$md"
fi
cat "$BENCH_WORK/report.md" >>"$md"

if bash "$here/plot.sh" "$BENCH_WORK/medians.tsv" "$png" \
     "softverbs vs references, $(date '+%F %H:%M'), commit $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null)"; then
  plot_note="plot: $png (gnuplot)"
  # shellcheck disable=SC2016  # backquotes for markdown
  printf '\nPlot: `%s`\n' "$(basename "$png")" >>"$md"
else
  plot_note="plot: not drawn (see above)"
  printf '\nPlot: not drawn (gnuplot failed or is missing)\n' >>"$md"
fi

echo
cat "$BENCH_WORK/report.md"
echo "report: $md"
echo "$plot_note"
echo "samples and logs: $BENCH_WORK"
exit 0
