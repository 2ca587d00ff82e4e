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
#                    usec/xfer (one-way, the mean) of 100,000 transfers: rxm
#                    connects and fills its buffer pools on the first one,
#                    inside the timed loop (tens of ms on this VM)
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

fi_verbs() {  # EP (rdm|msg|dgram)
  bench_next_port
  SRV=(env "LD_LIBRARY_PATH=$SV_LIB" fi_pingpong -p verbs -e "$1" -I 100000 -S 8 -B "$PORT")
  CLI=(env "LD_LIBRARY_PATH=$SV_LIB" fi_pingpong -p verbs -e "$1" -I 100000 -S 8 -P "$PORT" 127.0.0.1)
  consumer_row "sv/host/fi_$1/8" fi_pingpong libfabric-bin fi_lat
}

# One repetition of these programs.
fam_consumers() {
  ev_rc_pingpong
  ev_qperf
  fi_verbs rdm
  fi_verbs msg
  fi_verbs dgram
}
