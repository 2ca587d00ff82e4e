#!/usr/bin/env bash
# The libraries a user would pick instead of softverbs, same host, server
# and client on 127.0.0.1:
#   UCX ucx_perftest (ucx-utils): tag_lat (50th percentile, one-way) and
#     tag_bw (overall bandwidth and message rate) with
#       UCX_TLS=posix,self       shared memory only
#       UCX_TLS=posix,cma,self   shared memory + cross-memory attach for
#                                large messages ("cma" alone cannot send
#                                active messages: UCX rejects it); measured
#                                only where it differs from posix (latency
#                                at 64 KiB, bandwidth from 4 KiB)
#       UCX_TLS=tcp,self         TCP over loopback (bandwidth from 4 KiB),
#                                and across the veth (the 8 B message rate)
#   libfabric fi_pingpong (libfabric-bin 1.17): "-p shm -e rdm" and
#     "-p tcp -e msg"; usec/xfer is one-way, the mean of the run.
# Sourced by run.sh (needs lib.sh).
# Sourced: its variables are used by the other scripts.
# shellcheck disable=SC2034

declare -A UCX_TLS_OF=([posix]="posix,self" [posix+cma]="posix,cma,self" [tcp]="tcp,self")
BENCH_UCX_TLS=${BENCH_UCX_TLS:-posix posix+cma tcp}

# ucx_perftest pair: TLS TEST(tag_lat|tag_bw) SIZE [WHERE(host|veth)]; the
# latency (tag_lat) or message rate (tag_bw of 8 or 64 B) also in REF_UCX_VAL
peer_ucx() {
  local tls=$1 test=$2 size=$3 where=${4:-host} n w key base unit=MiB/s sns="" cns=""
  local addr=127.0.0.1
  REF_UCX_VAL=
  base=ucx-$tls/$where
  if [[ $where == veth ]]; then
    sns=$SVB_NS_A cns=$SVB_NS_B addr=$SVB_ADDR_A
  fi
  if [[ $test == tag_lat ]]; then
    key=$base/tag_lat/$size unit=us
    if ((size >= 65536)); then n=1000 w=50; else n=10000 w=500; fi
  else
    key=$base/tag_bw/$size
    case $size in
      8|64) n=200000 w=5000 ;;
      4096) n=50000 w=500 ;;
      65536) n=5000 w=50 ;;
      *) n=$((536870912 / size)) w=20 ;;
    esac
  fi
  if ! command -v ucx_perftest >/dev/null; then
    bench_fail "$key" "$unit" "ucx_perftest not installed (Debian package ucx-utils)"
    return
  fi
  if bench_gave_up "$key"; then bench_fail "$key" "$unit" "skipped: timed out before"; return; fi
  bench_next_port
  SRV=(env "UCX_TLS=${UCX_TLS_OF[$tls]}" ucx_perftest -p "$PORT")
  CLI=(env "UCX_TLS=${UCX_TLS_OF[$tls]}" ucx_perftest "$addr" -p "$PORT" -t "$test"
       -s "$size" -n "$n" -w "$w")
  local name=ucx-${tls}-${where}_${test}_$size v
  if ! bench_pair "$name" "$sns" "$cns" "$PORT" 30; then
    if [[ $test == tag_lat ]]; then
      bench_fail "$key" us "$PAIR_ERR"
    else
      bench_fail "$key" MiB/s "$PAIR_ERR"
      ((size <= 64)) && bench_fail "$base/tag_rate/$size" Mpps "$PAIR_ERR"
    fi
    return
  fi
  if [[ $test == tag_lat ]]; then
    v=$(ucx_field "$PAIR_OUT" lat)
    if [[ -n $v ]]; then bench_rec "$key" us "$v"; else bench_fail "$key" us "no Final: row"; fi
    REF_UCX_VAL=$v
  else
    v=$(ucx_field "$PAIR_OUT" bw)
    if [[ -n $v ]]; then bench_rec "$key" MiB/s "$v"; else bench_fail "$key" MiB/s "no Final: row"; fi
    if ((size <= 64)); then
      v=$(ucx_field "$PAIR_OUT" rate)
      if [[ -n $v ]]; then bench_rec "$base/tag_rate/$size" Mpps "$v"; else bench_fail "$base/tag_rate/$size" Mpps "no Final: row"; fi
      REF_UCX_VAL=$v
    fi
  fi
}

# fi_pingpong pair: PROVIDER(shm|tcp) SIZE; the latency also in REF_FI_VAL
peer_fi() {
  local prov=$1 size=$2 ep key n v
  REF_FI_VAL=
  key=fi-$prov/host/pingpong/$size
  if [[ $prov == shm ]]; then ep=rdm; else ep=msg; fi
  if ((size >= 65536)); then n=1000; else n=5000; fi
  if ! command -v fi_pingpong >/dev/null; then
    bench_fail "$key" us "fi_pingpong not installed (Debian package libfabric-bin)"
    return
  fi
  if bench_gave_up "$key"; then bench_fail "$key" us "skipped: timed out before"; return; fi
  bench_next_port
  SRV=(fi_pingpong -p "$prov" -e "$ep" -I "$n" -S "$size" -B "$PORT")
  CLI=(fi_pingpong -p "$prov" -e "$ep" -I "$n" -S "$size" -P "$PORT" 127.0.0.1)
  if bench_pair "fi-${prov}_pingpong_$size" "" "" "$PORT" 30; then
    v=$(fi_lat "$PAIR_OUT")
    if [[ -n $v ]]; then bench_rec "$key" us "$v"; else bench_fail "$key" us "no result row"; fi
    REF_FI_VAL=$v
  else
    bench_fail "$key" us "$PAIR_ERR"
  fi
}

# One repetition of every peer measurement.
fam_peers() {
  local tls s prov
  for tls in $BENCH_UCX_TLS; do
    for s in $BENCH_LAT_SIZES; do
      # posix+cma differs from posix only where UCX switches to rendezvous.
      [[ $tls == posix+cma ]] && ((s < 65536)) && continue
      peer_ucx "$tls" tag_lat "$s"
    done
    for s in $BENCH_BW_SIZES; do
      [[ $tls != posix ]] && ((s < 4096)) && continue
      peer_ucx "$tls" tag_bw "$s"
    done
  done
  for prov in shm tcp; do
    for s in $BENCH_LAT_SIZES; do peer_fi "$prov" "$s"; done
  done
}
