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
# The server ends by itself after the last size.
SV_SERVER=(fi_pingpong -p "$prov" -e "$ep" -I 100 -B "$SV_PORT")
SV_CLIENT=(fi_pingpong -p "$prov" -e "$ep" -I 100 -P "$SV_PORT" "$SV_HOST")
if ! sv_run_pair; then
  sv_show server "$SV_SLOG"
  sv_fail "the server did not listen on $SV_PORT"
fi
sv_show server "$SV_SLOG"
sv_show client "$SV_CLOG"
sv_status server "$SV_SRC" || sv_fail "fi_pingpong -e $ep: server status $SV_SRC"
sv_status client "$SV_CRC" || sv_fail "fi_pingpong -e $ep: client status $SV_CRC"
if sv_sanitizer_report "$SV_SLOG" || sv_sanitizer_report "$SV_CLOG"; then
  sv_fail "fi_pingpong -e $ep: sanitizer report"
fi
sv_fi_figures "$ep" "$SV_SLOG" >/dev/null || sv_fail "fi_pingpong -e $ep: the server's table is incomplete"
figures=$(sv_fi_figures "$ep" "$SV_CLOG") || sv_fail "fi_pingpong -e $ep: the client's table is incomplete"
while IFS= read -r line; do echo "$ep measured: $line"; done <<<"$figures"
sv_log "PASS: fi_pingpong -p '$prov' -e $ep on one host"
