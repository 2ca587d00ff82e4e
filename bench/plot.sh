#!/usr/bin/env bash
# Draws the run's plot with gnuplot (Debian package gnuplot-nox): bandwidth
# and latency against message size, softverbs (solid) against the peers
# (dashed) and the machine limits (dotted); same host on top, across the
# veth below.
#
#   bench/plot.sh MEDIANS.tsv OUT.png [TITLE]
#
# MEDIANS.tsv is what bench_medians (report.sh) writes: KEY UNIT MEDIAN ...
# with KEY = TOOL/WHERE/TEST/SIZE.  Exit 0 with the PNG, 1 without it.
set -uo pipefail

[[ $# -ge 2 ]] || { sed -n '2,11s/^# \{0,1\}//p' "$0" >&2; exit 2; }
medians=$1
out=$2
title=${3:-softverbs benchmark}
if ! command -v gnuplot >/dev/null; then
  echo "plot.sh: gnuplot is not installed (Debian package gnuplot-nox)" >&2
  exit 1
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/svb-plot.XXXXXX")
trap 'rm -rf "$dir"' EXIT

# series PREFIX STYLE LABEL: a "plot" clause for PREFIX/<size> keys, or
# nothing if none has a value.  STYLE: sv, peer or limit, and a colour.
series() {
  local prefix=$1 style=$2 color=$3 label=$4 f
  f=$dir/$(tr '/+' '__' <<<"$prefix").dat
  awk -F'\t' -v p="$prefix/" 'index($1, p) == 1 && $3 != "" && $3 != "-" {
      s = substr($1, length(p) + 1); if (s ~ /^[0-9]+$/) print s, $3 }' "$medians" |
    sort -n >"$f"
  [[ -s $f ]] || return 0
  local dt lw pt
  case $style in
    sv) dt=1 lw=3 pt=7 ;;
    peer) dt=2 lw=2 pt=5 ;;
    *) dt=3 lw=2 pt=9 ;;
  esac
  printf "'%s' using 1:2 with linespoints dt %s lw %s pt %s ps 1.2 lc rgb '%s' title '%s', " \
    "$f" "$dt" "$lw" "$pt" "$color" "$label"
}

panel() {  # TITLE YLABEL CLAUSES
  local clauses=$3
  echo "set title '$1'"
  echo "set ylabel '$2'"
  if [[ -z $clauses ]]; then
    echo "unset logscale y"
    echo "set label 1 'no data' at graph 0.5, graph 0.5 center"
    echo "plot [8:65536] [0:1] 2 notitle"
    echo "unset label 1"
    echo "set logscale y"
  else
    echo "plot ${clauses%, }"
  fi
}

bw_host=$(
  series sv/host/write_bw sv '#d62728' 'softverbs ib\_write\_bw'
  series sv/host/read_bw sv '#ff7f0e' 'softverbs ib\_read\_bw'
  series sv/host/send_bw sv '#8c564b' 'softverbs ib\_send\_bw'
  series ucx-posix/host/tag_bw peer '#1f77b4' 'UCX posix tag\_bw'
  series ucx-posix+cma/host/tag_bw peer '#17becf' 'UCX posix+cma tag\_bw'
  series ucx-tcp/host/tag_bw peer '#9467bd' 'UCX tcp tag\_bw'
  series tcp/host/bw limit '#2ca02c' 'TCP stream, loopback'
  series pvm/host/writev_bw limit '#7f7f7f' 'process\_vm\_writev'
  series memcpy/host/copy limit '#000000' 'memcpy, one core'
)
lat_host=$(
  series sv/host/send_lat sv '#8c564b' 'softverbs ib\_send\_lat'
  series sv/host/write_lat sv '#d62728' 'softverbs ib\_write\_lat'
  series sv/host/read_lat sv '#ff7f0e' 'softverbs ib\_read\_lat (round trip)'
  series ucx-posix/host/tag_lat peer '#1f77b4' 'UCX posix tag\_lat'
  series ucx-posix+cma/host/tag_lat peer '#17becf' 'UCX posix+cma tag\_lat'
  series ucx-tcp/host/tag_lat peer '#9467bd' 'UCX tcp tag\_lat'
  series fi-shm/host/pingpong peer '#e377c2' 'libfabric shm fi\_pingpong'
  series fi-tcp/host/pingpong peer '#bcbd22' 'libfabric tcp fi\_pingpong'
  series tcp/host/lat limit '#2ca02c' 'TCP busy-poll ping-pong, loopback'
  series shm/host/spin_lat limit '#000000' 'shm ping-pong, spinning'
  series shm/host/futex_lat limit '#7f7f7f' 'shm ping-pong, futex'
  series pvm/host/writev_lat limit '#aaaaaa' 'process\_vm\_writev call'
)
bw_veth=$(
  series sv/veth/write_bw sv '#d62728' 'softverbs ib\_write\_bw'
  series sv/veth/read_bw sv '#ff7f0e' 'softverbs ib\_read\_bw'
  series sv/veth/send_bw sv '#8c564b' 'softverbs ib\_send\_bw'
  series tcp/veth/bw limit '#2ca02c' 'TCP stream, veth'
)
lat_veth=$(
  series sv/veth/send_lat sv '#8c564b' 'softverbs ib\_send\_lat'
  series sv/veth/write_lat sv '#d62728' 'softverbs ib\_write\_lat'
  series sv/veth/read_lat sv '#ff7f0e' 'softverbs ib\_read\_lat (round trip)'
  series tcp/veth/lat limit '#2ca02c' 'TCP busy-poll ping-pong, veth'
)

{
  echo "set terminal pngcairo size 2000,1300 font 'sans,10'"
  echo "set output '$out'"
  echo "set multiplot layout 2,2 title '${title//\'/}' font 'sans,13'"
  echo "set logscale xy"
  echo "set grid xtics ytics mytics lc rgb '#dddddd'"
  echo "set xtics ('8' 8, '64' 64, '512' 512, '4K' 4096, '32K' 32768, '64K' 65536, '1M' 1048576)"
  echo "set xrange [6:1400000]"
  echo "set xlabel 'message size (bytes)'"
  # Legends beside each panel, so that they never hide a curve.
  echo "set key outside right top vertical Left reverse font 'sans,9' spacing 1.1"
  panel 'Same host: bandwidth (higher is better)' 'MiB/s' "$bw_host"
  echo "set xrange [6:90000]"
  panel 'Same host: latency (lower is better)' 'microseconds' "$lat_host"
  echo "set xrange [6:1400000]"
  panel 'Across veth (two network namespaces): bandwidth' 'MiB/s' "$bw_veth"
  echo "set xrange [6:90000]"
  panel 'Across veth: latency' 'microseconds' "$lat_veth"
  echo "unset multiplot"
} >"$dir/plot.gp"

if ! gnuplot "$dir/plot.gp" 2>"$dir/err" || [[ ! -s $out ]]; then
  echo "plot.sh: gnuplot failed: $(tail -n 5 "$dir/err")" >&2
  exit 1
fi
exit 0
