#!/usr/bin/env bash
# fi_pingpong.sh BUILD PORT EP: Debian's unmodified fi_pingpong over
# libfabric's verbs provider on softverbs0, endpoint type EP (msg, rdm or
# dgram), server `fi_pingpong -p PROV -e EP -B PORT` and client
# `fi_pingpong -p PROV -e EP -P PORT 127.0.0.1` (PORT: fi_pingpong's own TCP
# control connection; the data path is libfabric's).  Passes when both exit
# 0 and print a complete table (tests/fi-pingpong-checks.sh); prints the
# client's figures.
set -euo pipefail
build=$1 port=$2 ep=$3
# shellcheck source=tests/compat/lib.sh
. "$(dirname "$0")/../compat/lib.sh" "$build" "$port"
# shellcheck source=tests/fi-pingpong-checks.sh
. "$(dirname "$0")/../fi-pingpong-checks.sh"

sv_need fi_pingpong
prov=$(sv_fi_provider "$ep")
slog=$SV_TMP/server.log clog=$SV_TMP/client.log
rc=0 src=0 waited=0
sv_log "server: fi_pingpong -p '$prov' -e $ep -I 100 -B $SV_PORT"
timeout -k 5 "$SV_TIMEOUT" env "${SV_ENV[@]}" \
  fi_pingpong -p "$prov" -e "$ep" -I 100 -B "$SV_PORT" >"$slog" 2>&1 </dev/null &
SV_SERVER_PID=$!
while ! sv_port_listening "$SV_PORT"; do
  if ! kill -0 "$SV_SERVER_PID" 2>/dev/null || ((waited >= SV_LISTEN_WAIT * 10)); then
    sv_show server "$slog"
    sv_fail "the server did not listen on $SV_PORT"
  fi
  sleep 0.1
  waited=$((waited + 1))
done
sv_log "client: fi_pingpong -p '$prov' -e $ep -I 100 -P $SV_PORT $SV_HOST"
timeout -k 5 "$SV_TIMEOUT" env "${SV_ENV[@]}" \
  fi_pingpong -p "$prov" -e "$ep" -I 100 -P "$SV_PORT" "$SV_HOST" >"$clog" 2>&1 </dev/null || rc=$?
# The server ends by itself after the last size; a failed client leaves it
# waiting, so it gets the usual grace and is then stopped.
waited=0
while kill -0 "$SV_SERVER_PID" 2>/dev/null && ((waited < SV_PEER_GRACE * 10)); do
  sleep 0.1
  waited=$((waited + 1))
done
kill -TERM "$SV_SERVER_PID" 2>/dev/null || true
wait "$SV_SERVER_PID" 2>/dev/null || src=$?
SV_SERVER_PID=
sv_show server "$slog"
sv_show client "$clog"
sv_status server "$src" || sv_fail "fi_pingpong -e $ep: server status $src"
sv_status client "$rc" || sv_fail "fi_pingpong -e $ep: client status $rc"
if sv_sanitizer_report "$slog" || sv_sanitizer_report "$clog"; then
  sv_fail "fi_pingpong -e $ep: sanitizer report"
fi
sv_fi_figures "$ep" "$slog" >/dev/null || sv_fail "fi_pingpong -e $ep: the server's table is incomplete"
figures=$(sv_fi_figures "$ep" "$clog") || sv_fail "fi_pingpong -e $ep: the client's table is incomplete"
while IFS= read -r line; do echo "$ep measured: $line"; done <<<"$figures"
sv_log "PASS: fi_pingpong -p '$prov' -e $ep on one host"
