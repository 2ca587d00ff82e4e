#!/usr/bin/env bash
# softverbs under programs other than perftest, on one host (server and
# client on 127.0.0.1), 8 B.  Sleeping on a completion channel, as most
# servers do:
#   rc_pingpong_ev   ibv_rc_pingpong -e (ibverbs-utils): usec/iter halved,
#                    one-way, the mean of the run
#   qperf_rc_lat     qperf rc_lat (qperf waits on events): its latency, one-way
# ib_send_lat -e is perftest.sh's send_lat_ev.  Their reference is the
# machine's eventfd ping-pong (machine.sh: shm/host/eventfd_lat), one
# wake-up per message.  libfabric's verbs provider:
#   fi_rdm, fi_msg   fi_pingpong -p verbs -e rdm (ofi_rxm over RC) and -e msg:
#                    the one-way latency of a transfer once connected.
#                    fi_pingpong's clock starts before the first transfer,
#                    on which rxm connects and fills two 16 MiB buffer pools
#                    (about 40 ms here: 0.2 us of each of 100,000 transfers),
#                    so each runs twice, FI_SHORT and FI_LONG transfers:
#                    (T_long - T_short) / (2 (FI_LONG - FI_SHORT)), T = its
#                    usec/xfer x 2 x transfers; fi_EP_setup is what the short
#                    run took beyond its transfers (ms)
#   fi_dgram         fi_pingpong -p verbs -e dgram (UD), the same way
# Sourced by run.sh (needs lib.sh).
# Sourced: SRV and CLI are bench_pair's.
# shellcheck disable=SC2034

# qperf prints "latency = 31.5 us" (or ns, ms): microseconds.
qperf_us() {  # FILE
  awk '$1 == "latency" && $2 == "=" {
         v = $3; u = $4
         if (u == "ns") v /= 1000; else if (u == "ms") v *= 1000; else if (u == "sec") v *= 1e6
         r = v }
       END { if (r != "") printf "%.3f\n", r }' "$1"
}

# ibv_rc_pingpong prints "N usec/iter" for a round trip: one-way.
rc_pingpong_us() {  # FILE
  awk '/usec\/iter/ { for (i = 1; i < NF; i++) if ($(i + 1) == "usec/iter") r = $i / 2 }
       END { if (r != "") printf "%.3f\n", r }' "$1"
}

# One row: PROG (from PACKAGE) as server SRV and client CLI, which the
# caller builds with $PORT; PARSE prints the value from the client's output.
consumer_row() {  # KEY PROG PACKAGE PARSE
  local key=$1 v
  if ! command -v "$2" >/dev/null; then
    bench_fail "$key" us "$2 not installed (Debian package $3)"
    return
  fi
  if ! bench_pair "${key//\//_}" "" "" "$PORT" 30; then
    bench_fail "$key" us "$PAIR_ERR"
    return
  fi
  v=$("$4" "$PAIR_OUT")
  if [[ -n $v ]]; then bench_rec "$key" us "$v"; else bench_fail "$key" us "no result in the client's output"; fi
}

ev_rc_pingpong() {
  bench_next_port
  SRV=(env "LD_LIBRARY_PATH=$SV_LIB" ibv_rc_pingpong -d "$SV_DEV" -g 0 -p "$PORT" -s 8 -n 2000 -e)
  CLI=("${SRV[@]}" 127.0.0.1)
  consumer_row sv/host/rc_pingpong_ev/8 ibv_rc_pingpong ibverbs-utils rc_pingpong_us
}

ev_qperf() {
  bench_next_port
  SRV=(env "LD_LIBRARY_PATH=$SV_LIB" qperf -lp "$PORT")
  CLI=(env "LD_LIBRARY_PATH=$SV_LIB" qperf -lp "$PORT" -t 2 -m 8 127.0.0.1 rc_lat)
  consumer_row sv/host/qperf_rc_lat/8 qperf qperf qperf_us
}

FI_SHORT=20
FI_LONG=100000

# One fi_pingpong run of N transfers: FI_US its usec/xfer (else PAIR_ERR).
fi_run() {  # EP N
  FI_US=""
  bench_next_port
  SRV=(env "LD_LIBRARY_PATH=$SV_LIB" fi_pingpong -p verbs -e "$1" -I "$2" -S 8 -B "$PORT")
  CLI=(env "LD_LIBRARY_PATH=$SV_LIB" fi_pingpong -p verbs -e "$1" -I "$2" -S 8 -P "$PORT" 127.0.0.1)
  bench_pair "fi_$1_$2" "" "" "$PORT" 30 || return 1
  FI_US=$(fi_lat "$PAIR_OUT")
  [[ -n $FI_US ]] || PAIR_ERR="no result in the client's output"
  [[ -n $FI_US ]]
}

fi_verbs() {  # EP (rdm|msg|dgram)
  local key=sv/host/fi_$1/8 short per setup
  if ! command -v fi_pingpong >/dev/null; then
    bench_fail "$key" us "fi_pingpong not installed (Debian package libfabric-bin)"
    return
  fi
  if ! fi_run "$1" "$FI_SHORT"; then
    bench_fail "$key" us "$FI_SHORT transfers: $PAIR_ERR"
    return
  fi
  short=$FI_US
  if ! fi_run "$1" "$FI_LONG"; then
    bench_fail "$key" us "$FI_LONG transfers: $PAIR_ERR"
    return
  fi
  read -r per setup < <(awk -v s="$short" -v l="$FI_US" -v ns="$FI_SHORT" -v nl="$FI_LONG" \
    'BEGIN { p = (l * nl - s * ns) / (nl - ns); printf "%.3f %.2f\n", p, 2 * ns * (s - p) / 1000 }')
  bench_rec "$key" us "$per"
  bench_rec "sv/host/fi_$1_setup/8" ms "$setup"
}

# One repetition of these programs.
fam_consumers() {
  ev_rc_pingpong
  ev_qperf
  fi_verbs rdm
  fi_verbs msg
  fi_verbs dgram
}
