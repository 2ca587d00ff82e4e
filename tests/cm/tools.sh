#!/bin/bash
# Runs Debian's unmodified rdma_cm tools (rdmacm-utils) against our
# libibverbs/librdmacm: tools.sh SCENARIO LIBDIR
# Server and client are separate processes on 127.0.0.1, each under
# `timeout`.  Exit 0 pass, 77 skip, other fail.  Each scenario has its own
# port (udaddy and mckey have a fixed one: ctest serialises them).
set -u
scenario=${1:?scenario}
libdir=${2:?libdir}
# Our libraries first and, for a sanitized build, its runtime preloaded.
# shellcheck source=tests/run-env.sh
. "$(dirname "$0")/../run-env.sh"
sv_run_env "$(dirname "$libdir")" || { echo "FAIL: no sanitizer runtime for $libdir"; exit 1; }
export SOFTVERBS_CM_TIMEOUT_MS=${SOFTVERBS_CM_TIMEOUT_MS:-3000}

work=$(mktemp -d /tmp/cm-tool-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
SRV=$work/server.out
CLI=$work/client.out

need() { command -v "$1" >/dev/null || { echo "SKIP: $1 not installed"; exit 77; }; }
fail() { echo "FAIL: $*"; echo "--- server:"; cat "$SRV" 2>/dev/null; echo "--- client:"; cat "$CLI" 2>/dev/null; exit 1; }

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
	timeout 60 env "${SV_RUN_ENV[@]}" "$@" >"$SRV" 2>&1 &
	SRV_PID=$!
	wait_listen "$port"
	echo "server listening: $(ss -ltnH "sport = :$port" | awk '{print $4}' | head -1)"
}

run_client() {		# run_client CMD... ; sets CLI_RC
	timeout 60 env "${SV_RUN_ENV[@]}" "$@" >"$CLI" 2>&1
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
*)
	echo "unknown scenario $scenario"; exit 2 ;;
esac
echo "PASS: $scenario"
exit 0
