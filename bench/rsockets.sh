#!/usr/bin/env bash
# rsockets against the kernel's TCP over the same path: Debian's rstream
# (rdmacm-utils) through our librdmacm, and the same program in its -T s
# mode, which runs the same test on kernel sockets.  Both in their default
# (nonblocking) mode, server and client pinned as every pair:
#   lat/64       -S 64 -I 10000 -C 1: ping-pong, usec/xfer (one-way)
#   bw/1048576   -S 1048576 -C 200: 200 MiB each way, Gb/sec as MiB/s
# and riostream's ping-pong (lat/64 only), whose side waits by watching
# its riomap'ed buffer for the peer's riowrite (RDMA WRITEs no poll asks
# for), next to the same TCP twin.
# Keys: rs/WHERE/TEST/SIZE (rsockets), rio/WHERE/lat/64 (riostream) and
# rs-tcp/WHERE/TEST/SIZE (-T s), WHERE host or veth.  Sourced by run.sh
# (needs lib.sh).
# Sourced: SRV and CLI are bench_pair's.
# shellcheck disable=SC2034

# rstream's result row: "custom BYTES XFERS ITERS TOTAL TIME GB/SEC USEC/XFER".
rstream_val() {  # FILE lat|bw
  awk -v k="$2" '$1 == "custom" && NF >= 8 {
      if (k == "lat") r = $8; else r = $7 * 1e9 / 8 / 1048576 }
    END { if (r != "") printf "%.3f\n", r }' "$1"
}

rs_row() {  # WHERE TOOL(rs|rs-tcp|rio) TEST SIZE
  local where=$1 tool=$2 test=$3 size=$4 key unit sns="" cns="" addr=127.0.0.1 v
  local args=(-S "$size") mode=() prog=rstream
  key=$tool/$where/$test/$size
  if [[ $test == lat ]]; then unit=us args+=(-I 10000 -C 1); else unit=MiB/s args+=(-C 200); fi
  [[ $tool == rs-tcp ]] && mode=(-T s)
  [[ $tool == rio ]] && prog=riostream
  if ! command -v "$prog" >/dev/null; then
    bench_fail "$key" "$unit" "$prog not installed (Debian package rdmacm-utils)"
    return
  fi
  if bench_gave_up "$key"; then bench_fail "$key" "$unit" "skipped: timed out before"; return; fi
  if [[ $where == veth ]]; then
    sns=$SVB_NS_A cns=$SVB_NS_B addr=$SVB_ADDR_A
  fi
  bench_next_port
  SRV=(env "LD_LIBRARY_PATH=$SV_LIB" "$prog" -p "$PORT" -b "$addr" "${mode[@]}" "${args[@]}")
  CLI=(env "LD_LIBRARY_PATH=$SV_LIB" "$prog" -p "$PORT" -s "$addr" "${mode[@]}" "${args[@]}")
  if ! bench_pair "${key//\//_}" "$sns" "$cns" "$PORT" 30; then
    bench_fail "$key" "$unit" "$PAIR_ERR"
    return
  fi
  v=$(rstream_val "$PAIR_OUT" "$test")
  if [[ -n $v ]]; then bench_rec "$key" "$unit" "$v"; else bench_fail "$key" "$unit" "no result row in $prog's output"; fi
}

# One repetition at WHERE: each rsockets row right after its TCP twin, so
# that the pair meets the same machine.
fam_rsockets() {  # WHERE
  local t s
  for t in lat bw; do
    if [[ $t == lat ]]; then s=64; else s=1048576; fi
    rs_row "$1" rs-tcp "$t" "$s"
    rs_row "$1" rs "$t" "$s"
    [[ $t == lat ]] && rs_row "$1" rio "$t" "$s"
  done
}
