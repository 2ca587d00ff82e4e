#!/usr/bin/env bash
# perftest ib_write_bw, default mode (RC), short run (-n 100), on softverbs0.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh" "$@"
sv_perftest ib_write_bw
