#!/usr/bin/env bash
# perftest.sh BUILD PORT PROG [ARGS...]: Debian's unmodified perftest PROG as
# server and client on softverbs0 (lib.sh's sv_perftest: -d softverbs0, a
# short run), with ARGS on both sides; both must exit 0 with their result
# table.
#
# Retried, and reported, are the failures that say nothing about softverbs'
# results (lib.sh, sv_perftest_retried: perftest cannot sample its CPU
# clock, perftest's own -R connection race).
set -euo pipefail
build=$1 port=$2 prog=$3
shift 3
args=("$@")
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh" "$build" "$port"

sv_perftest_retried "$prog" "${args[@]}"
