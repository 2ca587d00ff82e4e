#!/usr/bin/env bash
# Scale and idle cost, once per run (not repeated):
#   qp_scale -n 1000      1,000 connected RC QPs in each of two processes,
#                         one SEND per QP each way, twice (the first time
#                         the channels connect): RSS / PSS per QP (KiB),
#                         fds and threads of the process, connect time;
#                         then a SEND ping-pong on one of them (one-way us)
#   qp_scale -n 100 -i 10 100 connected QPs and nothing to do for 10 s: CPU
#                         of the busier process (utime+stime from
#                         /proc/<pid>/stat, all threads, or its
#                         CLOCK_PROCESS_CPUTIME_ID if that says more),
#                         % of one core
#   cmtime -c 1000        rdmacm-utils over our librdmacm.so.1: connection
#                         setup per connection (us) and total (ms)
#   qp_scale -n 10000     the scale target: that many connected RC QPs in one
#                         process (or the most the descriptor limit holds),
#                         RSS per QP
# Sourced by run.sh (needs lib.sh).
# Sourced: its variables are used by the other scripts.
# shellcheck disable=SC2034

BENCH_SCALE_QPS=${BENCH_SCALE_QPS:-1000}
BENCH_IDLE_QPS=${BENCH_IDLE_QPS:-100}
BENCH_IDLE_SECONDS=${BENCH_IDLE_SECONDS:-10}
BENCH_BIG_QPS=${BENCH_BIG_QPS:-10000}

# The parent's "p_FIELD value" lines of qp_scale's output ($PAIR_OUT) as
# scale/host/NAME/N: scale_rec N FIELD:NAME:UNIT...
scale_rec() {
  local n=$1 f k v unit val
  shift
  for f in "$@"; do
    IFS=: read -r k v unit <<<"$f"
    val=$(bench_get "$PAIR_OUT" "p_$k")
    if [[ -n $val ]]; then bench_rec "scale/host/$v/$n" "$unit" "$val"
    else bench_fail "scale/host/$v/$n" "$unit" "no p_$k in the output"; fi
  done
}

scale_qp() {
  local n=$BENCH_SCALE_QPS
  local prog=$BENCH_BIN/qp_scale
  if [[ ! -x $prog ]]; then
    bench_fail "scale/host/rss_per_qp/$n" KiB "$prog not built (run make)"
    return
  fi
  if bench_one "scale_qp_$n" 120 env "LD_LIBRARY_PATH=$SV_LIB" "$prog" -n "$n" -d "$SV_DEV"; then
    scale_rec "$n" rss_kib_per_qp:rss_per_qp:KiB pss_kib_per_qp:pss_per_qp:KiB fds:fds:count \
      threads:threads:count connect_ms:connect_ms:ms send_ms:send_ms:ms send2_ms:send2_ms:ms \
      pingpong_us:pingpong_us:us
  else
    bench_fail "scale/host/rss_per_qp/$n" KiB "$PAIR_ERR"
  fi
}

scale_idle() {
  local n=$BENCH_IDLE_QPS s=$BENCH_IDLE_SECONDS p c
  local prog=$BENCH_BIN/qp_scale
  if [[ ! -x $prog ]]; then
    bench_fail "idle/host/cpu_pct/$n" % "$prog not built (run make)"
    return
  fi
  if bench_one "idle_$n" $((s + 60)) env "LD_LIBRARY_PATH=$SV_LIB" "$prog" -n "$n" -i "$s" -l 0 -d "$SV_DEV"; then
    # The busier of the two processes, by the larger of its two readings:
    # /proc/<pid>/stat (utime+stime, tick-split) and CLOCK_PROCESS_CPUTIME_ID.
    p=$(awk '$1 ~ /^[pc]_idle_cpu_pct/ { if ($2 > m) m = $2; f = 1 } END { if (f) print m + 0 }' "$PAIR_OUT")
    if [[ -n $p ]]; then
      bench_rec "idle/host/cpu_pct/$n" % "$p"
    else
      bench_fail "idle/host/cpu_pct/$n" % "no idle_cpu_pct in the output"
    fi
  else
    bench_fail "idle/host/cpu_pct/$n" % "$PAIR_ERR"
  fi
}

scale_cmtime() {
  local n=$BENCH_SCALE_QPS v
  if ! command -v cmtime >/dev/null; then
    bench_fail "cmtime/host/connect_us/$n" us "cmtime not installed (Debian package rdmacm-utils)"
    return
  fi
  if [[ ! -e $SV_LIB/librdmacm.so.1 ]]; then
    bench_fail "cmtime/host/connect_us/$n" us "$SV_LIB/librdmacm.so.1 not built"
    return
  fi
  bench_next_port
  # The server of rdma-core 44's cmtime does not exit by itself: bench_pair
  # stops it once the client is done.
  SRV=(env "LD_LIBRARY_PATH=$SV_LIB" cmtime -b 127.0.0.1 -p "$PORT" -c "$n")
  CLI=(env "LD_LIBRARY_PATH=$SV_LIB" cmtime -s 127.0.0.1 -p "$PORT" -c "$n")
  if ! bench_pair "cmtime_$n" "" "" "$PORT" 90; then
    bench_fail "cmtime/host/connect_us/$n" us "$PAIR_ERR"
    return
  fi
  # rdma-core 44: "connect      :   total ms   max ms   min us   us / conn";
  # newer ones: "cm connect   avg/conn  total(us)  us/conn  sum(us) ...".
  v=$(awk '/^connect[[:space:]]*:/ { print $NF; exit }
           /^cm connect/ { print $5; exit }' "$PAIR_OUT")
  if [[ -n $v ]]; then bench_rec "cmtime/host/connect_us/$n" us "$v"
  else bench_fail "cmtime/host/connect_us/$n" us "no connect row: $(bench_why "$PAIR_OUT")"; fi
  v=$(awk '/^connect[[:space:]]*:/ { print $3; exit }
           /^cm connect/ { print $4 / 1000; exit }' "$PAIR_OUT")
  [[ -n $v ]] && bench_rec "cmtime/host/connect_total_ms/$n" ms "$v"
}

# A same-host QP holds a descriptor only while its channels connect (a
# ring channel closes its socket after the handshake: transport/shm/peer.h),
# so a descriptor hard limit under one per QP may not hold BENCH_BIG_QPS of
# them (root may not raise it in a container).  Then the run takes the
# most that fit, in steps of 500, and scale/host/qps_max says how many
# connected; scale/host/fd_limit is the limit it had.
scale_big() {
  local want=$BENCH_BIG_QPS n hard
  local prog=$BENCH_BIN/qp_scale
  if [[ ! -x $prog ]]; then
    bench_fail "scale/host/qps_max/$want" count "$prog not built (run make)"
    return
  fi
  hard=$(ulimit -Hn)
  n=$want
  if [[ $hard != unlimited ]]; then
    bench_rec "scale/host/fd_limit/$want" count "$hard"
    ((want + 400 > hard)) && n=$(((hard - 400) / 500 * 500))
  fi
  if bench_one "scale_qp_big" 180 env "LD_LIBRARY_PATH=$SV_LIB" "$prog" -n "$n" -l 1000 -d "$SV_DEV"; then
    bench_rec "scale/host/qps_max/$want" count "$n"
    scale_rec "$want" rss_kib_per_qp:rss_per_qp_max:KiB send_ms:send_ms_max:ms \
      send2_ms:send2_ms_max:ms pingpong_us:pingpong_us_max:us
  else
    bench_fail "scale/host/qps_max/$want" count "$n QPs: $PAIR_ERR"
  fi
}

fam_scale() {
  scale_qp
  scale_big
  scale_idle
  scale_cmtime
}
