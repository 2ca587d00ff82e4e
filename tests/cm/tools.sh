#!/bin/bash
# Runs Debian's unmodified rdma_cm tools (rdmacm-utils) against our
# libibverbs/librdmacm: tools.sh SCENARIO LIBDIR
# The rs_* scenarios are rsockets (rsocket(7)): rstream, riostream, rcopy and
# udpong, and socat and iperf3 over Debian's librspreload.
# Server and client are separate processes on 127.0.0.1, each under
# `timeout`.  Exit 0 pass, 77 skip, other fail.  Each scenario has its own
# port (udaddy and mckey have a fixed one: ctest serialises them).
set -u
scenario=${1:?scenario}
libdir=${2:?libdir}
libdir=$(cd "$libdir" && pwd) || exit 1	# absolute: rs_rcopy changes directory
# Our libraries first and, for a sanitized build, its runtime preloaded.
# shellcheck source=tests/run-env.sh
. "$(dirname "$0")/../run-env.sh"
sv_run_env "$(dirname "$libdir")" || { echo "FAIL: no sanitizer runtime for $libdir"; exit 1; }
export SOFTVERBS_CM_TIMEOUT_MS=${SOFTVERBS_CM_TIMEOUT_MS:-3000}

work=$(mktemp -d /tmp/cm-tool-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
SRV=$work/server.out
CLI=$work/client.out
PROG_TIMEOUT=60		# seconds each program may run

need() { command -v "$1" >/dev/null || { echo "SKIP: $1 not installed"; exit 77; }; }
# (a log is cut at 300 lines: udpong may have printed an error a million times)
show() { [ -e "$1" ] || return 0; head -n 300 "$1"; [ "$(wc -l <"$1")" -le 300 ] || echo "[... cut]"; }
fail() { echo "FAIL: $*"; echo "--- server:"; show "$SRV"; echo "--- client:"; show "$CLI"; exit 1; }

# Wait until something listens on TCP port $1 (our listeners are real ones).
wait_listen() {
	for _ in $(seq 1 100); do
		ss -ltnH "sport = :$1" 2>/dev/null | grep -q . && return 0
		sleep 0.05
	done
	fail "nothing listening on port $1"
}

start_server() {	# start_server PORT CMD...
	local port=$1; shift
	timeout "$PROG_TIMEOUT" env "${SV_RUN_ENV[@]}" "$@" >"$SRV" 2>&1 &
	SRV_PID=$!
	wait_listen "$port"
	echo "server listening: $(ss -ltnH "sport = :$port" | awk '{print $4}' | head -1)"
}

run_client() {		# run_client CMD... ; sets CLI_RC
	timeout "$PROG_TIMEOUT" env "${SV_RUN_ENV[@]}" "$@" >"$CLI" 2>&1
	CLI_RC=$?
}

server_rc() { wait "$SRV_PID"; SRV_RC=$?; }

rping_case() {		# rping_case PORT EXTRA-ARGS...
	local port=$1; shift
	need rping
	start_server "$port" rping -s -a 127.0.0.1 -p "$port" -C 50 -V -v "$@"
	run_client rping -c -a 127.0.0.1 -p "$port" -C 50 -V -v "$@"
	server_rc
	[ "$CLI_RC" = 0 ] || fail "rping client exit $CLI_RC"
	[ "$SRV_RC" = 0 ] || fail "rping server exit $SRV_RC"
	grep -q '^ping data: rdma-ping-49' "$CLI" || fail "no rdma-ping-49 from the client"
	grep -q 'server ping data: rdma-ping-49' "$SRV" || fail "server did not see ping 49"
	grep '^ping data: rdma-ping-49' "$CLI" | cut -c1-60
}

# --- rsockets ------------------------------------------------------------------

# Wait until something listens on TCP port $1 or has UDP port $1 bound (a
# datagram rsocket: whichever of the two the implementation holds).
wait_bound() {
	for _ in $(seq 1 100); do
		ss -ltunH "sport = :$1" 2>/dev/null | grep -q . && return 0
		sleep 0.05
	done
	fail "nothing bound on port $1"
}

# server_end SECS: give the server SECS to end by itself, then stop it;
# sets SRV_RC (a stopped server: 124 or 143).
server_end() {
	local i
	for ((i = 0; i < $1 * 20; i++)); do
		kill -0 "$SRV_PID" 2>/dev/null || break
		sleep 0.05
	done
	kill "$SRV_PID" 2>/dev/null
	wait "$SRV_PID"; SRV_RC=$?
}

# rs_rows FILE: the rows of an rstream/riostream/udpong result table in FILE
# (64_lat, 1.5k_bw, ..., custom).  The programs go on, and exit 0, after a
# failed test (a data verification failure, a dead connection): its row is
# missing, so the rows are what counts.
rs_rows() { grep -cE '^([0-9.]+[kmg]?_(lat|bw)|custom) ' "$1"; }

# rs_check FILE WHO N: FILE has N result rows and no verification failure.
rs_check() {
	local n
	n=$(rs_rows "$1")
	! grep -q 'verification failed' "$1" || fail "$2: data verification failed"
	[ "$n" = "$3" ] || fail "$2 printed $n result rows, not $3"
}

# rs_pair PROG PORT ROWS ARGS...: server `PROG -p PORT ARGS`, client the same
# plus -s 127.0.0.1; both exit 0 and print ROWS result rows.
rs_pair() {
	local prog=$1 port=$2 rows=$3
	shift 3
	need "$prog"
	echo "--- $prog $*"
	start_server "$port" "$prog" -p "$port" "$@"
	run_client "$prog" -p "$port" -s 127.0.0.1 "$@"
	# a failed client leaves the server waiting for it: 2 s, not 60
	if [ "$CLI_RC" = 0 ]; then server_end 20; else server_end 2; fi
	[ "$CLI_RC" = 0 ] || fail "$prog $* client exit $CLI_RC"
	[ "$SRV_RC" = 0 ] || fail "$prog $* server exit $SRV_RC"
	rs_check "$CLI" client "$rows"
	rs_check "$SRV" server "$rows"
	tail -n 2 "$CLI"
}

# rs_preload: run what follows over Debian's librspreload (rsocket(7)'s
# preload: socket calls go to rsockets), after the sanitizer runtime of a
# sanitized build, with our CM's trace on (SOFTVERBS_CM_DEBUG, docs/cm.md):
# rs_over_cm then proves a connection went through rdma_cm, i.e. that the
# program's socket was an rsocket and not a kernel TCP socket (the CM's own
# TCP connection to the listener's port is there in both cases, so `ss`
# cannot tell them apart).
rs_preload() {
	local f lib="" e env=() found=0
	for f in /usr/lib/*/rsocket/librspreload.so.1 /usr/lib*/rsocket/librspreload.so.1; do
		[ -e "$f" ] && { lib=$f; break; }
	done
	[ -n "$lib" ] || { echo "SKIP: librspreload.so.1 (librdmacm1) not found"; exit 77; }
	f=$(env LD_LIBRARY_PATH="$libdir" ldd "$lib" | awk '$1 == "librdmacm.so.1" { print $3 }')
	[ "$(realpath -m "$f")" = "$(realpath -m "$libdir/librdmacm.so.1")" ] ||
		fail "$lib loads librdmacm.so.1 from '$f', not from $libdir"
	for e in "${SV_RUN_ENV[@]}"; do
		if [[ $e == LD_PRELOAD=* ]]; then e+=":$lib"; found=1; fi
		env+=("$e")
	done
	[ "$found" = 1 ] || env+=("LD_PRELOAD=$lib")
	SV_RUN_ENV=("${env[@]}" SOFTVERBS_CM_DEBUG=1)
	echo "preload: $lib"
}

# rs_over_cm FILE WHO [N]: WHO's CM trace shows at least N (default 1)
# connections established.
rs_over_cm() {
	local n
	n=$(grep -c 'event RDMA_CM_EVENT_ESTABLISHED' "$1")
	[ "$n" -ge "${3:-1}" ] || fail "$2: $n rdma_cm connections, not ${3:-1}: not over rsockets"
}

case "$scenario" in
rping)
	rping_case 27501 ;;
rping_big)
	# rping itself refuses -S 65536 ("valid range is 23 to 65536" but it
	# checks size > 65535), so 65535 is the largest ping it can do.
	rping_case 27502 -S 65535 ;;
rping_q)
	rping_case 27503 -q ;;
rdma_server)
	need rdma_server
	start_server 27504 rdma_server -p 27504
	run_client rdma_client -s 127.0.0.1 -p 27504
	server_rc
	grep -q 'rdma_client: end 0' "$CLI" || fail "client did not end 0"
	grep -q 'rdma_server: end 0' "$SRV" || fail "server did not end 0"
	{ [ "$CLI_RC" = 0 ] && [ "$SRV_RC" = 0 ]; } || fail "exit codes $CLI_RC/$SRV_RC"
	cat "$CLI" ;;
refused)
	# Nobody listens: the client fails as an IB CM's REQ for an unknown
	# service would, and with SOFTVERBS_DEBUG=1 says so in words.
	need rdma_client
	SV_RUN_ENV+=(SOFTVERBS_DEBUG=1)
	run_client rdma_client -s 127.0.0.1 -p 27509
	[ "$CLI_RC" != 0 ] || fail "rdma_client connected to nobody"
	grep -q 'rdma_connect: Connection refused' "$CLI" || fail "no ECONNREFUSED from rdma_connect"
	grep -q '127.0.0.1:27509: nobody listens there .*RDMA_CM_EVENT_REJECTED status 8' "$CLI" ||
		fail "no line naming why the connection was refused"
	grep 'nobody listens' "$CLI" ;;
xrc_rc)
	need rdma_xserver
	start_server 27505 rdma_xserver -p 27505
	run_client rdma_xclient -s 127.0.0.1 -p 27505
	server_rc
	grep -q 'rdma_xclient: end 0' "$CLI" || fail "xclient did not end 0"
	grep -q 'rdma_xserver: end 0' "$SRV" || fail "xserver did not end 0"
	cat "$CLI" ;;
xrc)
	# XRC through librdmacm: an XRC target id with its SRQ, an initiator
	# that learns the SRQ number from the accept's private data.
	need rdma_xserver
	start_server 27506 rdma_xserver -p 27506 -c x
	run_client rdma_xclient -s 127.0.0.1 -p 27506 -c x
	server_rc
	grep -q 'rdma_xclient: end 0' "$CLI" || fail "xclient did not end 0"
	grep -q 'rdma_xserver: end 0' "$SRV" || fail "xserver did not end 0"
	{ [ "$CLI_RC" = 0 ] && [ "$SRV_RC" = 0 ]; } || fail "exit codes $CLI_RC/$SRV_RC"
	cat "$SRV" "$CLI" ;;
ucmatose)
	need ucmatose
	start_server 27507 ucmatose -p 27507 -c 4 -C 100
	run_client ucmatose -s 127.0.0.1 -p 27507 -c 4 -C 100
	server_rc
	grep -q 'return status 0' "$CLI" || fail "client status"
	grep -q 'return status 0' "$SRV" || fail "server status"
	{ [ "$CLI_RC" = 0 ] && [ "$SRV_RC" = 0 ]; } || fail "exit codes $CLI_RC/$SRV_RC"
	tail -2 "$CLI" ;;
cmtime)
	# The cmtime server serves until killed; the client's result counts.
	need cmtime
	start_server 27508 cmtime -p 27508 -c 100
	run_client cmtime -s 127.0.0.1 -p 27508 -c 100
	kill "$SRV_PID" 2>/dev/null
	[ "$CLI_RC" = 0 ] || fail "cmtime client exit $CLI_RC"
	grep -q '^connect' "$CLI" || fail "no connect timing"
	grep -q '^disconnect' "$CLI" || fail "no disconnect timing"
	cat "$CLI" ;;
udaddy)
	need udaddy
	start_server 7174 udaddy
	run_client udaddy -s 127.0.0.1
	server_rc
	grep -q 'return status 0' "$CLI" || fail "client status"
	grep -q 'return status 0' "$SRV" || fail "server status"
	tail -1 "$CLI" ;;
mckey)
	need mckey
	timeout 30 env "${SV_RUN_ENV[@]}" mckey -m 239.1.1.1 -C 5 >"$SRV" 2>&1 &
	SRV_PID=$!
	sleep 1
	run_client mckey -m 239.1.1.1 -s -C 5
	server_rc
	grep -q 'joined dgid' "$CLI" || fail "sender did not join"
	grep -q 'joined dgid' "$SRV" || fail "receiver did not join"
	grep -q 'return status 0' "$CLI" || fail "sender status"
	grep -q 'return status 0' "$SRV" || fail "receiver status"
	grep -q 'data transfers complete' "$SRV" || fail "receiver got no data"
	cat "$SRV" ;;
rs_rstream)
	rs_pair rstream 27510 8 -T v ;;
rs_rstream_modes)
	# rstream's modes (-T options one by one: `-T b -T v`, not `-T bv`),
	# each with one custom transfer, not the default table, to stay short:
	# blocking, async (rpoll), nonblocking, rdma_getaddrinfo (-T r), numeric
	# address (-f ip), a small buffer, many iterations; -T s and -T f
	# (fork, which implies -T s) are kernel sockets, the reference.
	port=27520
	for opts in "-T b -T v -I 100 -C 10 -S 100000" "-T b -T v -I 10000 -C 1 -S 64" \
	            "-T a -T v -I 100 -C 10 -S 100000" "-T a -T v -I 10000 -C 1 -S 64" \
	            "-T n -T v -I 100 -C 10 -S 100000" "-T r -T v -I 100 -C 10 -S 100000" \
	            "-f ip -T v -I 100 -C 10 -S 100000" "-B 4096 -T v -I 100 -C 10 -S 100000" \
	            "-I 1000 -C 10 -S 100000 -T v" "-T s -T v -I 100 -C 10 -S 100000" \
	            "-T f -T v -I 100 -C 10 -S 100000"; do
		read -r -a args <<<"$opts"
		rs_pair rstream "$port" 1 "${args[@]}"
		port=$((port + 1))
	done ;;
rs_all_sizes)
	# Every size (-S all: 33 of them, latency and bandwidth), verified.  The
	# plain build runs the default (nonblocking) mode, 30-60 s; the extended
	# suite (SOFTVERBS_TEST_EXTENDED=1, `make test-extended`) also the
	# blocking and async modes and riostream, and the sanitized builds, at
	# several times the cost, only there.
	PROG_TIMEOUT=240
	if [ "${SOFTVERBS_TEST_EXTENDED:-0}" != 1 ]; then
		[ -z "$SV_RUN_SANITIZE" ] ||
			{ echo "SKIP: -S all runs in the plain build, or with SOFTVERBS_TEST_EXTENDED=1"; exit 77; }
		rs_pair rstream 27530 66 -T v -S all
	else
		rs_pair rstream 27530 66 -T v -S all
		rs_pair rstream 27531 66 -T b -T v -S all
		rs_pair rstream 27532 66 -T a -T v -S all
		rs_pair riostream 27533 66 -T n -T v -S all
	fi ;;
rs_riostream)
	# riostream: riomap'ed buffers written with riowrite.
	rs_pair riostream 27540 8 -T v
	rs_pair riostream 27541 8 -T b -T v
	rs_pair riostream 27542 8 -T a -T v ;;
rs_rcopy)
	# The rcopy server serves until stopped, in its current directory.
	need rcopy
	cd "$work" || fail "cd $work"
	head -c 5000000 /dev/urandom >"$work/src"
	start_server 27511 rcopy -p 27511
	run_client rcopy "$work/src" "127.0.0.1:$work/dst" -p 27511
	for _ in $(seq 1 100); do grep -q 'closing...done' "$SRV" && break; sleep 0.05; done
	server_end 0
	[ "$CLI_RC" = 0 ] || fail "rcopy client exit $CLI_RC"
	grep -q 'closing...done' "$SRV" || fail "the server did not finish the file"
	cmp "$work/src" "$work/dst" || fail "the copy differs from the file"
	cat "$CLI" ;;
rs_socat)
	# socat, unmodified, over the preload: a 5 MB file, byte for byte.
	need socat
	rs_preload
	head -c 5000000 /dev/urandom >"$work/src"
	start_server 27512 socat -u TCP-LISTEN:27512,reuseaddr "OPEN:$work/out,creat,trunc"
	run_client socat -u "OPEN:$work/src" TCP:127.0.0.1:27512
	server_end 10
	[ "$CLI_RC" = 0 ] || fail "socat client exit $CLI_RC"
	[ "$SRV_RC" = 0 ] || fail "socat server exit $SRV_RC"
	rs_over_cm "$SRV" server
	rs_over_cm "$CLI" client
	cmp "$work/src" "$work/out" || fail "the file arrived different"
	echo "5000000 bytes through socat over rsockets" ;;
rs_iperf3)
	# iperf3 over the preload: its control and its data connection are
	# rsockets.  iperf3 asks for TCP_INFO, which rsockets do not have (as in
	# rdma-core): it warns "getsockopt - Operation not supported" and prints
	# no meaningful Retr/Cwnd; the bitrate is what counts.
	need iperf3
	rs_preload
	start_server 27513 iperf3 -s -1 -p 27513
	run_client iperf3 -c 127.0.0.1 -p 27513 -t 2
	server_end 10
	[ "$CLI_RC" = 0 ] || fail "iperf3 client exit $CLI_RC"
	[ "$SRV_RC" = 0 ] || fail "iperf3 server exit $SRV_RC"
	rs_over_cm "$SRV" server 2
	rs_over_cm "$CLI" client 2
	awk '/receiver$/ { for (i = 2; i <= NF; i++) if ($i ~ /bits\/sec$/ && $(i - 1) + 0 > 0) ok = 1 }
	     END { exit !ok }' "$CLI" || fail "no receiver line with a non-zero bitrate"
	grep -E 'sender$|receiver$' "$CLI" ;;
rs_udpong)
	# Datagram rsockets.  The udpong server serves until stopped; it and the
	# client spin, printing, on some errors, so their output is cut at 2 MB
	# (head; not ulimit -f, which our memfd-backed memory would hit).  The
	# client exits 0 even when a test failed (its row is missing), so the
	# rows are counted.  Custom runs only: in udpong's default table a reply
	# that comes later than its 1 ms timeout makes the client resend the
	# stale reply it then receives, forever (its bug; on a loaded 2-core VM
	# after a bandwidth burst that happens) -- see docs/cm.md.
	need udpong
	timeout "$PROG_TIMEOUT" env "${SV_RUN_ENV[@]}" udpong -b 127.0.0.1 -p 27514 \
		> >(stdbuf -o0 head -c 2000000 >"$SRV") 2>&1 &
	SRV_PID=$!
	wait_bound 27514
	n=0
	for opts in "-T e -C 1000 -S 1000" "-C 5000 -S 64" "-T b -T e -C 1000 -S 64" "-T a -T e -C 1000 -S 512"; do
		# shellcheck disable=SC2086 # opts are words
		timeout 20 env "${SV_RUN_ENV[@]}" udpong -s 127.0.0.1 -p 27514 $opts 2>&1 |
			head -c 2000000 >"$CLI"
		CLI_RC=${PIPESTATUS[0]}
		[ "$CLI_RC" = 0 ] || fail "udpong $opts: client exit $CLI_RC"
		rs_check "$CLI" "client $opts" 1
		echo "$opts: $(tail -n 1 "$CLI")"
		n=$((n + 1))
	done
	server_end 0
	[ "$(grep -c 'client login from 127.0.0.1' "$SRV")" = "$n" ] || fail "the server did not see $n logins" ;;
*)
	echo "unknown scenario $scenario"; exit 2 ;;
esac
echo "PASS: $scenario"
exit 0
