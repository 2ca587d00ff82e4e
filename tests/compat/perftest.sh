#!/usr/bin/env bash
# perftest.sh BUILD PORT PROG [ARGS...]: Debian's unmodified perftest PROG as
# server and client on softverbs0 (lib.sh's sv_perftest: -d softverbs0, a
# short run), with ARGS on both sides; both must exit 0 with their result
# table.
#
# Retried (SV_PERFTEST_RETRIES times at most), and reported, are the failures that say nothing
# about softverbs' results (tests/perftest-checks.sh, sv_perftest_flake:
# perftest cannot sample its CPU clock, perftest's own -R connection race);
# they come in bursts on a loaded machine.  Any other failure fails at once.
set -euo pipefail
build=$1 port=$2 prog=$3
shift 3
args=("$@")
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh" "$build" "$port"

for ((try = 1; try <= SV_PERFTEST_RETRIES; try++)); do
  if (sv_perftest "$prog" "${args[@]}"); then
    exit 0
  fi
  why=$(sv_perftest_flake "$SV_TMP/server.log" "$SV_TMP/client.log" "${args[@]}") ||
    sv_fail "$prog ${args[*]} failed"
  sv_log "$why; retry $try of $SV_PERFTEST_RETRIES"
  SV_PORT=$(sv_free_port)
done
sv_perftest "$prog" "${args[@]}"
