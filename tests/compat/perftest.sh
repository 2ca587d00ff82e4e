#!/usr/bin/env bash
# perftest.sh BUILD PORT PROG [ARGS...]: Debian's unmodified perftest PROG as
# server and client on softverbs0 (lib.sh's sv_perftest: -d softverbs0, a
# short run), with ARGS on both sides; both must exit 0 with their result
# table.
set -euo pipefail
build=$1 port=$2 prog=$3
shift 3
args=("$@")
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh" "$build" "$port"
sv_perftest "$prog" "${args[@]}"
