#!/usr/bin/env bash
# softverbs under Debian's unmodified perftest (LD_LIBRARY_PATH=build/lib),
# always -d softverbs0, a fresh -p port per run, every process in timeout:
#   ib_send_lat, ib_write_lat, ib_read_lat   t_typical (the median), us;
#       send/write report one-way (half the round trip), read the full
#       round trip of a READ; t_avg is kept too (key TEST_avg), to show tails
#   ib_send_bw, ib_write_bw, ib_read_bw      BW average [MB/sec = MiB/s];
#       for 8 and 64 B also MsgRate [Mpps]
#   send_lat_ev                             ib_send_lat -e: both sides sleep
#       on a completion channel (how servers wait), t_typical, us
#   send_lat_ud, send_bw_ud                 -c UD (key of its rate: send_ud_rate)
# WHERE is "host" (server and client on 127.0.0.1) or "veth" (server in
# test host svb-a, client in svb-b connecting to 10.78.0.1, each with its own
# /dev/shm and /tmp: softverbs sees two hosts and uses its TCP channels).
# Sourced by run.sh (needs lib.sh).
# Sourced: its variables are used by the other scripts.
# shellcheck disable=SC2034

# How long each perftest run goes: iterations (-n) by size, but the message
# rate runs (bw, 8 and 64 B) for one second (-D 1, whose warm-up and
# cool-down margins perftest leaves out).  A run of 50,000 small messages
# lasts 5-10 ms, of which perftest's server spends the first 1-3 ms between
# its last handshake and its first poll (it posted its 512 receives before
# the handshake, so the client's first SENDs meet an empty queue: RNR, as
# they would on a NIC); that skew, not the rate, decided such a run.
sv_count() {  # lat|bw SIZE: prints the perftest option and its value
  if [[ $1 == lat ]]; then
    if (($2 >= 65536)); then echo "-n 1000"; else echo "-n 3000"; fi
  else
    case $2 in
      8|64) echo "-D 1" ;;
      4096) echo "-n 20000" ;;
      65536) echo "-n 5000" ;;
      *) echo "-n $((536870912 / $2))" ;;
    esac
  fi
}

# SV_LIB is the library measured and SV_TOOL its keys' first part: "sv",
# or "old" for the build of --against (run.sh).
sv_pt() {  # WHERE TEST SIZE
  local where=$1 test=$2 size=$3 kind unit key prog nopt n sns="" cns="" addr=127.0.0.1 tmo v rkey=""
  local tool=${SV_TOOL:-sv} base=$test extra=()
  if [[ $test == *_ev ]]; then base=${test%_ev} extra=(-e); fi
  if [[ $test == *_ud ]]; then base=${test%_ud} extra=(-c UD); fi
  kind=${base#*_}
  prog=ib_$base
  key=$tool/$where/$test/$size
  if [[ $kind == lat ]]; then unit=us tmo=30; else unit=MiB/s tmo=40; fi
  ((size <= 64)) && [[ $kind == bw ]] && rkey=$tool/$where/${test/_bw/}_rate/$size
  if ! command -v "$prog" >/dev/null; then
    bench_fail "$key" "$unit" "$prog not installed (Debian package perftest)"
    return
  fi
  if [[ ! -e $SV_LIB/libibverbs.so.1 ]]; then
    bench_fail "$key" "$unit" "$SV_LIB/libibverbs.so.1 not built (run make)"
    return
  fi
  if bench_gave_up "$key"; then
    bench_fail "$key" "$unit" "skipped: timed out before"
    [[ -n $rkey ]] && bench_fail "$rkey" Mpps "skipped: timed out before"
    return
  fi
  if [[ $where == veth ]]; then
    sns=$SVB_NS_A cns=$SVB_NS_B addr=$SVB_ADDR_A
  fi
  read -r nopt n < <(sv_count "$kind" "$size")
  # The veth targets' reference, measured right before: this VM runs a
  # TCP ping-pong at 4.1 or 6.1 us, and a TCP stream at 2.2-3.3 or at
  # 1.3 GB/s, for tens of seconds at a time, so medians taken a minute
  # apart can compare two speeds of the machine.  The target is the
  # median of these pairs' ratios (report.sh).
  local pair_ref="" pair_fi="" pair_rate=""
  if [[ $tool != sv ]]; then
    :   # the pairs with TCP are the build under test's
  elif [[ $where == veth && $kind == lat && $size == 8 && $test != read_lat ]]; then
    ref_tcp veth lat "$size"
    pair_ref=$REF_TCP_VAL
  elif [[ $where == veth && $kind == bw && ($size == 65536 || $size == 1048576) ]]; then
    ref_tcp veth bw "$size"
    pair_ref=$REF_TCP_VAL
  elif [[ $where == host && $kind == bw && $size == 1048576 && $test != *_ud ]]; then
    # memcpy on the client's core, whose speed moves with the VM's too
    ref_one "memcpy/host/copy/$size" MiB/s mib_s 20 "${PIN_CLI[@]}" "$BENCH_BIN/memcpy_bw" "$size" 0.3
    pair_ref=$REF_ONE_VAL
  elif [[ $where == host && $size == 8 && ($test == send_lat || $test == write_lat) ]]; then
    # The best peers, right before on the same cores: this VM's speed is
    # set per run (docs/measurements.md, 'Run speed'), and UCX moves with it
    peer_ucx posix tag_lat "$size"
    pair_ref=$REF_UCX_VAL
    peer_fi shm "$size"
    pair_fi=$REF_FI_VAL
  elif [[ $where == host && $size == 8 && $test == send_bw ]]; then
    peer_ucx posix tag_bw "$size"
    pair_rate=$REF_UCX_VAL
  fi
  bench_next_port
  SRV=(env "LD_LIBRARY_PATH=$SV_LIB" "$prog" -d "$SV_DEV" -p "$PORT" -s "$size" "$nopt" "$n" -F "${extra[@]}")
  CLI=("${SRV[@]}" "$addr")
  if ! bench_pair "$tool-${where}_${test}_$size" "$sns" "$cns" "$PORT" "$tmo"; then
    bench_fail "$key" "$unit" "$PAIR_ERR"
    [[ -n $rkey ]] && bench_fail "$rkey" Mpps "$PAIR_ERR"
    return
  fi
  if [[ $kind == lat ]]; then
    v=$(pt_lat "$PAIR_OUT" "$size")
  else
    v=$(pt_bw "$PAIR_OUT" "$size")
  fi
  if [[ -n $v ]]; then bench_rec "$key" "$unit" "$v"; else bench_fail "$key" "$unit" "no result row for $size B"; fi
  bench_pair_rec "pair/$where/$test/$size" "$v" "$pair_ref"
  bench_pair_rec "pair-fi/$where/$test/$size" "$v" "$pair_fi"
  if [[ $kind == lat ]]; then
    v=$(pt_lat_avg "$PAIR_OUT" "$size")
    [[ -n $v ]] && bench_rec "$tool/$where/${test}_avg/$size" us "$v"
  fi
  if [[ -n $rkey ]]; then
    v=$(pt_rate "$PAIR_OUT" "$size")
    if [[ -n $v ]]; then bench_rec "$rkey" Mpps "$v"; else bench_fail "$rkey" Mpps "no result row for $size B"; fi
    bench_pair_rec "pair/$where/${test/_bw/}_rate/$size" "$v" "$pair_rate"
  fi
}

# One measurement of this build and, with --against, right after it the
# same one of the other build: old and new meet the same machine.
sv_pt_ab() {  # WHERE TEST SIZE
  sv_pt "$@"
  [[ -n ${BENCH_AGAINST:-} ]] && SV_LIB=$BENCH_AGAINST/lib SV_TOOL=old sv_pt "$@"
}

# One repetition of every perftest measurement at WHERE.
fam_sv() {  # WHERE
  local t s
  for t in send_lat write_lat read_lat; do
    for s in $BENCH_LAT_SIZES; do sv_pt_ab "$1" "$t" "$s"; done
  done
  sv_pt_ab "$1" send_lat_ev 8
  # UD between processes of one host, through their rings (issue 17's target)
  if [[ $1 == host ]]; then
    sv_pt_ab "$1" send_lat_ud 8
    sv_pt_ab "$1" send_bw_ud 8
  fi
  for t in send_bw write_bw read_bw; do
    for s in $BENCH_BW_SIZES; do sv_pt_ab "$1" "$t" "$s"; done
  done
}
