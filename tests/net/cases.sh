#!/usr/bin/env bash
# The cross-host tests: one CASE per ctest (tests/net/CMakeLists.txt).
#
#   tests/net/cases.sh BUILD_DIR CASE      run one case (as root)
#   tests/net/cases.sh BUILD_DIR --list    list the cases
#
# Every case creates its own pair of test hosts (hosts.sh, IDs p<PID>): the
# server runs in h1 (10.77.0.1), the client in h2 and connects to 10.77.0.1.
set -euo pipefail

[[ $# -eq 2 ]] || { echo "usage: $0 BUILD_DIR CASE|--list" >&2; exit 2; }
CASE=$2
SVN_NAME=net_$CASE
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh" "$1"
# shellcheck source=tests/qperf-checks.sh
. "$(dirname "$0")/../qperf-checks.sh"
# shellcheck source=tests/fi-pingpong-checks.sh
. "$(dirname "$0")/../fi-pingpong-checks.sh"

# --- libibverbs: the pingpong examples, LID or GID addressing ----------------

# pingpong PROG ARGS...: server `PROG -p 18515 ARGS`, client `... 10.77.0.1`.
pingpong() {
  local prog=$1
  shift
  svn_hosts_up
  SVN_SERVER=("$prog" -p 18515 "$@")
  SVN_CLIENT=("$prog" -p 18515 "$@" "$SVN_H1")
  svn_pair 18515
}

case_devinfo() {
  local a b
  svn_hosts_up
  svn_need ibv_devinfo
  a=$("$SVN_HOSTS" exec h1 env "${SVN_ENV[@]}" ibv_devinfo -v)
  b=$("$SVN_HOSTS" exec h2 env "${SVN_ENV[@]}" ibv_devinfo -v)
  printf '%s\n' "$a" | sed 's/^/h1| /' | grep -E 'hca_id|port_lid|GID|state:'
  printf '%s\n' "$b" | sed 's/^/h2| /' | grep -E 'hca_id|port_lid|GID|state:'
  grep -Eq 'port_lid:[[:space:]]+1$' <<<"$a" || svn_fail "h1's LID is not 0x0001"
  grep -Eq 'port_lid:[[:space:]]+2$' <<<"$b" || svn_fail "h2's LID is not 0x0002"
  grep -Eq 'GID\[ *0\]:[[:space:]]+0000:0000:0000:0000:0000:ffff:0a4d:0001' <<<"$a" ||
    svn_fail "h1's GID 0 is not ::ffff:10.77.0.1"
  grep -Eq 'GID\[ *0\]:[[:space:]]+0000:0000:0000:0000:0000:ffff:0a4d:0002' <<<"$b" ||
    svn_fail "h2's GID 0 is not ::ffff:10.77.0.2"
  grep -q 'PORT_ACTIVE' <<<"$a" || svn_fail "h1's port is not active"
  grep -q 'PORT_ACTIVE' <<<"$b" || svn_fail "h2's port is not active"
  svn_log "PASS: LIDs 0x0001 / 0x0002, GIDs ::ffff:10.77.0.1 / ::ffff:10.77.0.2"
}

case_rc_pingpong() { pingpong ibv_rc_pingpong -n 1000; }
case_rc_pingpong_gid0() { pingpong ibv_rc_pingpong -g 0 -n 1000; }
case_rc_pingpong_1m() { pingpong ibv_rc_pingpong -s 1048576 -n 100; }
case_ud_pingpong() { pingpong ibv_ud_pingpong -g 0 -s 1024; }
case_srq_pingpong() { pingpong ibv_srq_pingpong -g 0 -q 8; }
case_uc_pingpong() { pingpong ibv_uc_pingpong -g 0; }
case_xsrq_pingpong() {
  SVN_SERVER_EXPECT=('^success$')
  SVN_CLIENT_EXPECT=('^success$')
  pingpong ibv_xsrq_pingpong -g 0 -n 100
}

# Same host over the network path: both programs in h1, forced onto TCP
# channels.  While they run, the host must show a TCP connection other than
# the pingpong's own out-of-band one (port 18515): the softverbs channel.
case_rc_pingpong_tcp_loopback() {
  local seen=0 i
  svn_hosts_up
  SVN_EXTRA_ENV=(SOFTVERBS_TRANSPORT=tcp)
  SVN_SERVER=(ibv_rc_pingpong -p 18515 -n 1000)
  SVN_CLIENT=(ibv_rc_pingpong -p 18515 -n 1000 127.0.0.1)
  svn_start server h1 "${SVN_SERVER[@]}"
  svn_wait_listen server 18515
  svn_start client h1 "${SVN_CLIENT[@]}"
  for ((i = 0; i < SVN_TIMEOUT * 20; i++)); do
    svn_running client || break
    # /proc/PID/net/tcp of the client: its host's TCP sockets.  Established
    # (01) between two ports, neither of them 18515 (0x4853).
    if awk 'FNR > 1 && $4 == "01" { split($2, l, ":"); split($3, r, ":");
              if (l[2] != "4853" && r[2] != "4853") { f = 1; exit } } END { exit !f }' \
          "/proc/${PL_PID[client]}/net/tcp" 2>/dev/null; then
      seen=1
      break
    fi
    sleep 0.05
  done
  svn_wait client; local crc=$SVN_RC
  svn_wait server; local src=$SVN_RC
  svn_show server; svn_show client
  svn_status server "$src" || svn_fail "server failed"
  svn_status client "$crc" || svn_fail "client failed"
  svn_expect server "$SVN_PINGPONG" || svn_fail "server: no result"
  svn_expect client "$SVN_PINGPONG" || svn_fail "client: no result"
  if ((seen)); then
    svn_log "a softverbs TCP channel was seen while they ran"
  else
    svn_log "note: the run was too short to see its TCP channel in /proc/net/tcp"
  fi
  svn_log "PASS: ibv_rc_pingpong -n 1000 on one host with SOFTVERBS_TRANSPORT=tcp"
}

# --- librdmacm programs ------------------------------------------------------

case_rping() {
  svn_hosts_up
  SVN_SERVER=(rping -s -a "$SVN_H1" -C 50 -V -v)
  SVN_CLIENT=(rping -c -a "$SVN_H1" -C 50 -V -v)
  SVN_SERVER_EXPECT=('ping data: rdma-ping-49')
  SVN_CLIENT_EXPECT=('ping data: rdma-ping-49')
  svn_pair 7174
}

# Debian's rping refuses -S 1048576 ("Invalid size 1048576 (valid range is
# 23 to 65536)") and, despite that message, 65536 too: 65535 is the largest
# buffer it can ping with.
case_rping_64k() {
  svn_hosts_up
  SVN_SERVER=(rping -s -a "$SVN_H1" -S 65535 -C 10 -V)
  SVN_CLIENT=(rping -c -a "$SVN_H1" -S 65535 -C 10 -V)
  SVN_SERVER_EXPECT=('')            # -V: rping exits non-zero on a mismatch
  SVN_CLIENT_EXPECT=('')
  svn_pair 7174
}

case_udaddy() {
  svn_hosts_up
  SVN_SERVER=(udaddy)
  SVN_CLIENT=(udaddy -s "$SVN_H1")
  SVN_SERVER_EXPECT=('return status 0')
  SVN_CLIENT_EXPECT=('return status 0')
  svn_pair 7174
}

case_rdma_server() {
  svn_hosts_up
  SVN_SERVER=(rdma_server)
  SVN_CLIENT=(rdma_client -s "$SVN_H1")
  SVN_SERVER_EXPECT=('end 0')
  SVN_CLIENT_EXPECT=('rdma_client: end 0')
  svn_pair 7471
}

case_rdma_xserver() {
  svn_hosts_up
  SVN_SERVER=(rdma_xserver -c x)
  SVN_CLIENT=(rdma_xclient -s "$SVN_H1" -c x)
  SVN_SERVER_EXPECT=('rdma_xserver: end 0')
  SVN_CLIENT_EXPECT=('rdma_xclient: end 0')
  svn_pair 7471
}

# --- rsockets (rsocket(7)) -----------------------------------------------------

# rs_stream PROG PORT ARGS...: one custom rstream or riostream transfer
# (ARGS has -I, -C and -S): server `PROG -p PORT ARGS` in h1, client the same
# plus -s 10.77.0.1 in h2.  The programs exit 0 even when the test failed (a
# verification failure, a dead connection): its "custom" row is missing.
# (Not their default table: 100k round trips of 64 bytes take 20-180 s here,
# riostream's being the slowest.)
rs_stream() {
  local prog=$1 port=$2
  shift 2
  SVN_SERVER=("$prog" -p "$port" "$@")
  SVN_CLIENT=("$prog" -p "$port" -s "$SVN_H1" "$@")
  SVN_SERVER_EXPECT=('^custom ')
  SVN_CLIENT_EXPECT=('^custom ')
  svn_pair "$port"
  ! grep -q 'verification failed' "${SVN_LOG[server]}" "${SVN_LOG[client]}" ||
    svn_fail "data verification failed"
}

# rs_stream_pair PROG ARGS...: small messages, one at a time (2000 round trips
# of 4 KB), then 200 MB in 100 KB transfers, ten in flight.
rs_stream_pair() {
  local prog=$1
  shift
  svn_hosts_up
  rs_stream "$prog" 7471 "$@" -I 2000 -C 1 -S 4096
  rs_stream "$prog" 7472 "$@" -I 100 -C 10 -S 100000
}

case_rs_rstream() { rs_stream_pair rstream -T v; }
case_rs_rstream_blocking() { rs_stream_pair rstream -T b -T v; }
case_rs_riostream() { rs_stream_pair riostream -T v; }

# Datagram rsockets: udpong's echo test from h2 to h1 (the server serves
# until stopped; -b, or it binds ::1).  Custom runs, not its default table
# (docs/cm.md says why).
case_rs_udpong() {
  svn_hosts_up
  SVN_SERVER=(udpong -b "$SVN_H1" -p 7490)
  SVN_CLIENT=(udpong -s "$SVN_H1" -p 7490 -T e -C 1000 -S 1000)
  SVN_SERVER_GRACE=0.5 SVN_SERVER_LINGERS=1
  svn_run_pair 7490
  svn_show server; svn_show client
  svn_status client "$SVN_CRC" || svn_fail "udpong client failed"
  svn_expect client '^custom ' || svn_fail "the client reported no result"
  svn_expect server 'client login from ' || svn_fail "the server saw no login"
  svn_log "PASS: udpong echo from h2 to h1"
}

# rs_files: a directory both hosts see, writable (their /tmp is their own):
# RS_DIR, under /var/tmp, with a 5 MB file RS_DIR/src; removed at exit.
RS_DIR=
rs_files() {
  RS_DIR=$(mktemp -d /var/tmp/softverbs-net-rs.XXXXXX)
  trap 'rm -rf "$RS_DIR"; svn_cleanup' EXIT
  head -c 5000000 /dev/urandom >"$RS_DIR/src"
}

# rcopy: the client in h2 sends a file to the server in h1, which writes it
# (the server serves until stopped).
case_rs_rcopy() {
  svn_hosts_up
  rs_files
  SVN_SERVER=(rcopy -p 7427)
  SVN_CLIENT=(rcopy "$RS_DIR/src" "$SVN_H1:$RS_DIR/dst" -p 7427)
  SVN_SERVER_GRACE=0.5 SVN_SERVER_LINGERS=1
  svn_run_pair 7427
  svn_show server; svn_show client
  svn_status client "$SVN_CRC" || svn_fail "rcopy client failed"
  if svn_sanitizer_report "${SVN_LOG[server]}"; then svn_fail "sanitizer report from the server"; fi
  if svn_sanitizer_report "${SVN_LOG[client]}"; then svn_fail "sanitizer report from the client"; fi
  svn_expect client '^5000000 bytes in ' || svn_fail "the client did not report the transfer"
  svn_expect server 'closing\.\.\.done' || svn_fail "the server did not finish the file"
  cmp "$RS_DIR/src" "$RS_DIR/dst" || svn_fail "the copy differs from the file"
  svn_log "PASS: rcopy of 5000000 bytes from h2 to h1"
}

# socat, unmodified, over Debian's librspreload (after the sanitizer runtime
# of a sanitized build), a 5 MB file from h2 to h1.  Our CM's trace
# (SOFTVERBS_CM_DEBUG) proves each side's socket was an rsocket: a kernel TCP
# socket makes no rdma_cm connection (and `ss` cannot tell them apart: the
# CM's own TCP connection to the listener's port is there in both cases).
case_rs_socat() {
  local lib="" f preload=""
  for f in /usr/lib/*/rsocket/librspreload.so.1 /usr/lib*/rsocket/librspreload.so.1; do
    [[ -e $f ]] && { lib=$f; break; }
  done
  [[ -n $lib ]] || svn_skip "librspreload.so.1 (librdmacm1) not found"
  f=$(env LD_LIBRARY_PATH="$SVN_LIB" ldd "$lib" | awk '$1 == "librdmacm.so.1" { print $3 }')
  [[ $(realpath -m "$f") == "$(realpath -m "$SVN_LIB/librdmacm.so.1")" ]] ||
    svn_fail "$lib loads librdmacm.so.1 from '$f', not from $SVN_LIB"
  for f in "${SVN_ENV[@]}"; do
    [[ $f != LD_PRELOAD=* ]] || preload=${f#LD_PRELOAD=}
  done
  svn_hosts_up
  rs_files
  SVN_EXTRA_ENV=("LD_PRELOAD=${preload:+$preload:}$lib" SOFTVERBS_CM_DEBUG=1)
  SVN_SERVER=(socat -u "TCP-LISTEN:7480,reuseaddr" "OPEN:$RS_DIR/out,creat,trunc")
  SVN_CLIENT=(socat -u "OPEN:$RS_DIR/src" "TCP:$SVN_H1:7480")
  SVN_SERVER_EXPECT=('event RDMA_CM_EVENT_ESTABLISHED')
  SVN_CLIENT_EXPECT=('event RDMA_CM_EVENT_ESTABLISHED')
  svn_pair 7480
  cmp "$RS_DIR/src" "$RS_DIR/out" || svn_fail "the file arrived different"
  svn_log "PASS: 5000000 bytes through socat over rsockets, h2 to h1"
}

# --- security (docs/security.md) ------------------------------------------------

# A stranger (uid 65534) on the peer's own host says HELLO to the victim QP
# as that peer would, from the peer's address: tests/security/forge_net.c.
case_security_forge() {
  local bin=$SVN_BUILD/tests/security/security_forge_net
  [[ -x $bin ]] || svn_skip "$bin is not built"
  svn_hosts_up
  SVN_SERVER=("$bin" server)
  SVN_CLIENT=("$bin" client "$SVN_H1")
  SVN_SERVER_EXPECT=('server: secret intact')
  SVN_CLIENT_EXPECT=('client: end 0')
  svn_pair 18515
}

# A stranger (uid 65534) in h2 floods a victim in h1 with silent TCP
# connections (tests/security/flood.c, its attacker in h2's namespace).
case_security_flood() {
  local bin=$SVN_BUILD/tests/security/security_flood
  [[ -x $bin ]] || svn_skip "$bin is not built"
  svn_hosts_up
  SVN_EXTRA_ENV=(SEC_ATTACKER_NS="$("$SVN_HOSTS" ns h2)" SEC_TARGET_IP="$SVN_H1")
  svn_start victim h1 "$bin"
  svn_wait victim
  svn_show victim
  svn_status victim "$SVN_RC" || svn_fail "the victim failed"
  svn_log "PASS: the victim in h1 kept its traffic and closed h2's flood"
}

# --- perftest ------------------------------------------------------------------

# perftest PROG [ARGS]...: Debian's perftest PROG across hosts (svn_perftest),
# in its default mode, with --use_old_post_send and with -R, then once with
# each further ARGS (one word list); every run is judged on its own, the case
# fails at the end if any of them failed.
perftest() {
  local prog=$1 args run
  shift
  svn_hosts_up
  for args in "" --use_old_post_send -R "$@"; do
    read -r -a run <<<"$args"
    svn_perftest "$prog" "${run[@]}"
  done
  svn_perftest_done
}

case_perftest_send_bw() { perftest ib_send_bw '-c UC' '-c UD' --use-srq '-q 4' '-a -n 20'; }
case_perftest_send_lat() { perftest ib_send_lat '-c UC' '-c UD'; }
case_perftest_write_bw() { perftest ib_write_bw '-c UC' '-q 4' '-a -n 20'; }
case_perftest_write_lat() { perftest ib_write_lat '-c UC'; }
case_perftest_read_bw() { perftest ib_read_bw '-q 4' '-a -n 20'; }
case_perftest_read_lat() { perftest ib_read_lat; }
case_perftest_atomic_bw() { perftest ib_atomic_bw '-A CMP_AND_SWAP'; }
case_perftest_atomic_lat() { perftest ib_atomic_lat '-A CMP_AND_SWAP'; }

# --- qperf (issue "consumers", item 8) ----------------------------------------

# qperf_run TEST ARGS...: a fresh `qperf -lp 19765` server in h1, the client
# `qperf -lp 19765 ARGS 10.77.0.1 TEST` in h2; the client must exit 0 and
# print its figures, the server (stopped afterwards: it serves clients until
# then) must complain of nothing.  A failure is counted, not fatal.
QPERF_FAILED=()
qperf_run() {
  local test=$1 line
  shift
  svn_log "--- qperf $* $test"
  SVN_EXTRA_ENV=()
  SVN_SERVER=(qperf -lp 19765)
  SVN_CLIENT=(qperf -lp 19765 "$@" "$SVN_H1" "$test")
  # The server serves clients until it is stopped; it gets a moment to
  # report a failure of the run it just served.
  SVN_SERVER_GRACE=0.2 SVN_SERVER_LINGERS=1
  svn_run_pair 19765
  SVN_SERVER_GRACE="" SVN_SERVER_LINGERS=0
  svn_show server; svn_show client
  if sv_qperf_verdict "$test" "$SVN_CRC" "${SVN_LOG[server]}" "${SVN_LOG[client]}"; then
    while IFS= read -r line; do echo "$test $* measured: $line"; done <<<"$SV_QPERF_FIGURES"
  else
    QPERF_FAILED+=("$test $* ($SV_QPERF_WHY)")
    svn_log "FAIL: qperf $* $test"
  fi
}

# qperf_series TEST...: each TEST once with qperf's own connection setup and
# once with -cm1 (rdma_cm; qperf ignores it, with a warning, for UC and UD),
# each run judged on its own.
qperf_series() {
  local t
  svn_hosts_up
  for t in "$@"; do
    qperf_run "$t" -t 1
    qperf_run "$t" -cm1 -t 1
  done
  ((${#QPERF_FAILED[@]} == 0)) || svn_fail "${QPERF_FAILED[*]}"
  svn_log "PASS: qperf $* across hosts, with and without -cm1"
}

case_qperf_rc() {
  qperf_series rc_lat rc_bw rc_rdma_read_lat rc_rdma_read_bw rc_rdma_write_lat rc_rdma_write_bw
}
case_qperf_uc_ud() { qperf_series uc_lat uc_bw ud_lat ud_bw; }
case_qperf_atomic() {
  qperf_series rc_compare_swap_mr rc_fetch_add_mr ver_rc_compare_swap ver_rc_fetch_add
}

# --- libfabric: fi_pingpong over the verbs provider ------------------------------

# fi_pingpong_run EP: server `fi_pingpong -p PROV -e EP -I 100 -B 47592` in
# h1, client `... -P 47592 10.77.0.1` in h2 (47592: its TCP control port);
# both print a complete table (tests/fi-pingpong-checks.sh).
fi_pingpong_run() {
  local ep=$1 prov sizes
  prov=$(sv_fi_provider "$ep")
  sizes=$(sv_fi_sizes "$ep")
  svn_hosts_up
  SVN_SERVER=(fi_pingpong -p "$prov" -e "$ep" -I 100 -B 47592)
  SVN_CLIENT=(fi_pingpong -p "$prov" -e "$ep" -I 100 -P 47592 "$SVN_H1")
  SVN_SERVER_EXPECT=("^${sizes##* } +100 +=100 ")
  SVN_CLIENT_EXPECT=('')
  SVN_CLIENT_CHECK=(sv_fi_figures "$ep")
  svn_pair 47592
}

case_fi_pingpong_msg() { fi_pingpong_run msg; }
case_fi_pingpong_rdm() { fi_pingpong_run rdm; }
case_fi_pingpong_dgram() { fi_pingpong_run dgram; }

# --- UCX: ucx_perftest under softverbs run in each host -----------------------

# ucx_run TLS TEST ARGS...: a ucx_perftest pair over UCX_TLS=TLS, each side
# under `softverbs run` (UCX looks for the sysfs tree and /dev/infiniband);
# the client must print its Final figures.  A failure is counted, not fatal.
UCX_FAILED=()
ucx_run() {
  local tls=$1
  shift
  svn_log "--- ucx_perftest UCX_TLS=$tls $*"
  SVN_EXTRA_ENV=("UCX_TLS=$tls" UCX_NET_DEVICES=softverbs0:1)
  # Under TSan, UCX 1.13 crashes in its own md close (uct_ib_md_close, a
  # registration handle of 0x1) once it registers the implicit ODP MR this
  # device offers; the plain and ASan suites run that path.
  [[ ${SOFTVERBS_SANITIZE:-} == *thread* ]] && SVN_EXTRA_ENV+=("UCX_IB_REG_METHODS=rcache,direct")
  SVN_SERVER=("$SVN_BUILD/bin/softverbs" run ucx_perftest -p 13380 "$@")
  SVN_CLIENT=("$SVN_BUILD/bin/softverbs" run ucx_perftest -p 13380 "$@" "$SVN_H1")
  SVN_SERVER_EXPECT=("")
  SVN_CLIENT_EXPECT=('^Final:')
  (svn_pair 13380) || UCX_FAILED+=("UCX_TLS=$tls $*")
}

# tag_lat, tag_bw over rc_verbs (UD only to wire up) and ud_verbs; put_bw
# through UCT over rc_verbs, ucp_put_bw (active messages) over ud_verbs.
case_ucx_perftest() {
  svn_hosts_up
  svn_need ucx_perftest
  ucx_run rc_verbs,ud_verbs:aux,self -t tag_lat -n 10000
  ucx_run rc_verbs,ud_verbs:aux,self -t tag_bw -n 2000 -s 65536
  ucx_run rc_verbs -t put_bw -x rc_verbs -d softverbs0:1 -D zcopy -n 2000 -s 65536
  ucx_run ud_verbs,self -t tag_lat -n 10000
  ucx_run ud_verbs,self -t tag_bw -n 200 -s 65536
  ucx_run ud_verbs,self -t ucp_put_bw -n 200 -s 65536
  ((${#UCX_FAILED[@]} == 0)) || svn_fail "${UCX_FAILED[*]}"
  svn_log "PASS: all ucx_perftest runs across hosts"
}

# --- Open MPI: one rank in each host (issue "consumers", item 5) ------------------

# mpi_run PATH: tests/mpi/pingpong.c with mpirun in h1 (under softverbs run)
# starting rank 1 in h2 through tests/mpi/rsh-agent.sh (hosts.sh exec, then
# softverbs run there too); out-of-band traffic on sv0 only.  PATH names the
# Open MPI path (tests/mpi/paths.sh).  The program passes its own checks and
# prints its figures.
mpi_run() {
  local path=$1 dir=$SVN_TMP/mpi log=$SVN_TMP/mpi/out src rc=0 mpi_dir net_dir
  local mpirun=(mpirun --allow-run-as-root -np 2 --host "$SVN_H1,$SVN_H2" --bind-to none
                -x LD_LIBRARY_PATH --mca oob_tcp_if_include sv0 --mca btl_tcp_if_include sv0)
  src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
  mpi_dir=$src/tests/mpi net_dir=$src/tests/net
  svn_need mpirun
  svn_need mpicc
  # mpirun and orted are Open MPI's uninstrumented programs (tests/mpi/run.sh).
  [[ -z $SV_RUN_SANITIZE ]] || svn_skip "sanitized build ($SV_RUN_SANITIZE): mpirun, orted and the ranks are not run with the sanitizer runtime"
  # shellcheck source=tests/mpi/paths.sh
  . "$mpi_dir/paths.sh"
  sv_mpi_path "$path" || svn_fail "unknown Open MPI path '$path'"
  svn_hosts_up
  mkdir -p "$dir"
  mpicc -O2 -Wall -Wextra -Werror -o "$dir/pingpong" "$mpi_dir/pingpong.c"
  # The hosts' fresh /tmp keeps the program, the agent and hosts.sh visible.
  export SOFTVERBS_HOSTS_KEEP=$SOFTVERBS_HOSTS_KEEP:$dir:$mpi_dir:$net_dir
  export SOFTVERBS_CLI=$SVN_BUILD/bin/softverbs
  mpirun+=(--mca plm_rsh_agent "$mpi_dir/rsh-agent.sh" "${SV_MPI_ARGS[@]}")
  svn_log "h1: softverbs run ${mpirun[*]} pingpong ${SV_MPI_ITERS[*]}"
  timeout -k 5 "$SVN_TIMEOUT" "$SVN_HOSTS" exec h1 "$SOFTVERBS_CLI" run -- \
    "${mpirun[@]}" "$dir/pingpong" "${SV_MPI_ITERS[@]}" >"$log" 2>&1 </dev/null || rc=$?
  sed 's/^/mpirun| /' "$log"
  ((rc == 0)) || svn_fail "mpirun over $path across hosts: status $rc"
  grep -q '^PASS' "$log" || svn_fail "mpirun over $path across hosts: no PASS line"
  grep -E '^[0-9]+ bytes: ' "$log" | sed "s/^/$path measured: /"
  svn_log "PASS: Open MPI over $path, one rank in each host"
}

case_mpi_ucx_rc() { mpi_run ucx_rc; }
case_mpi_ucx_ud() { mpi_run ucx_ud; }
case_mpi_ofi() { mpi_run ofi; }
case_mpi_openib() { mpi_run openib; }
# Open MPI's own TCP transport between the same hosts, for comparison.
case_mpi_tcp() { mpi_run tcp; }

# --- failures ----------------------------------------------------------------

case_kill_server() { svn_hosts_up; svn_failure_run 18515 kill; }
case_link_down() { svn_hosts_up; svn_failure_run 18515 link; }

if [[ $CASE == --list ]]; then
  declare -F | awk '$3 ~ /^case_/ { sub(/^case_/, "", $3); print $3 }'
  exit 0
fi
declare -F "case_$CASE" >/dev/null || svn_fail "unknown case '$CASE' (--list lists them)"
"case_$CASE"
