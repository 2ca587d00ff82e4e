#!/usr/bin/env bash
# Machine limits, measured with the programs of bench/ref (build/bench/):
# memcpy on one core, process_vm_writev between two processes, a
# shared-memory ping-pong (spinning / futex), and raw TCP ping-pong
# (busy-polled non-blocking sockets; across the veth also on blocking ones,
# both sides asleep in recv, and in UDP datagrams) and stream, on loopback
# and across the veth between the two test hosts.  Sourced by run.sh (needs lib.sh).
# Sourced: its variables are used by the other scripts.
# shellcheck disable=SC2034

# One program, one value: KEY UNIT FIELD TIMEOUT CMD...
ref_one() {  # KEY UNIT FIELD TIMEOUT COMMAND...; the value also in REF_ONE_VAL
  local key=$1 unit=$2 field=$3 tmo=$4 v
  shift 4
  REF_ONE_VAL=
  if bench_gave_up "$key"; then bench_fail "$key" "$unit" "skipped: timed out before"; return; fi
  if bench_one "${key//\//_}" "$tmo" "$@"; then
    v=$(bench_get "$PAIR_OUT" "$field")
    if [[ -n $v ]]; then bench_rec "$key" "$unit" "$v"; else bench_fail "$key" "$unit" "no '$field' in the output"; fi
    REF_ONE_VAL=$v
  else
    bench_fail "$key" "$unit" "$PAIR_ERR"
  fi
}

# TCP: WHERE (host|veth) MODE (lat|lat2|latb|ulat|bw) SIZE; the value also in REF_TCP_VAL
ref_tcp() {
  local where=$1 mode=$2 size=$3 key unit field sns="" cns="" addr=127.0.0.1 n
  key=tcp/$where/$mode/$size
  REF_TCP_VAL=
  if [[ $mode == *lat* ]]; then unit=us; field=lat_us; n=$((size >= 65536 ? 1000 : 10000))
  else unit=MiB/s; field=mib_s; n=$(( (size >= 65536 ? 256 : 128) * 1048576 / size ))
  fi
  if [[ $where == veth ]]; then
    sns=$SVB_NS_A cns=$SVB_NS_B addr=$SVB_ADDR_A
  fi
  if bench_gave_up "$key"; then bench_fail "$key" "$unit" "skipped: timed out before"; return; fi
  bench_next_port
  SRV=("$BENCH_BIN/tcp_ref" server -b "$addr" -p "$PORT")
  CLI=("$BENCH_BIN/tcp_ref" client -a "$addr" -p "$PORT" -m "$mode" -s "$size" -n "$n")
  if bench_pair "${key//\//_}" "$sns" "$cns" "$PORT" 30; then
    local v
    v=$(bench_get "$PAIR_OUT" "$field")
    if [[ -n $v ]]; then bench_rec "$key" "$unit" "$v"; else bench_fail "$key" "$unit" "no '$field' in the output"; fi
    REF_TCP_VAL=$v
  else
    bench_fail "$key" "$unit" "$PAIR_ERR"
  fi
}

# One repetition of the same-host machine limits.
fam_machine() {
  local s
  for s in 65536 1048576; do
    ref_one "memcpy/host/copy/$s" MiB/s mib_s 20 "$BENCH_BIN/memcpy_bw" "$s" 0.3
  done
  ref_one pvm/host/writev_lat/8 us us_per_call 30 "$BENCH_BIN/pvm" 8 100000
  for s in 4096 65536 1048576; do
    ref_one "pvm/host/writev_bw/$s" MiB/s mib_s 30 "$BENCH_BIN/pvm" "$s"
  done
  ref_one shm/host/spin_lat/8 us lat_us 30 "$BENCH_BIN/shm_pingpong" spin 20000
  ref_one shm/host/futex_lat/8 us lat_us 30 "$BENCH_BIN/shm_pingpong" futex 20000
  ref_one shm/host/eventfd_lat/8 us lat_us 30 "$BENCH_BIN/shm_pingpong" eventfd 20000
  for s in $BENCH_LAT_SIZES; do ref_tcp host lat "$s"; done
  for s in $BENCH_STREAM_SIZES; do ref_tcp host bw "$s"; done
}

# One repetition of TCP across the veth (run.sh calls it only when the
# test hosts are up).
fam_tcp_veth() {
  local s
  for s in $BENCH_LAT_SIZES; do ref_tcp veth lat "$s"; done
  ref_tcp veth lat2 8      # softverbs' design: a connection per direction
  ref_tcp veth latb 8      # both asleep: the reference of ib_send_lat -e
  ref_tcp veth ulat 8      # UDP datagrams: the floor of RC over UDP (RoCE v2)
  for s in $BENCH_STREAM_SIZES; do ref_tcp veth bw "$s"; done
}
