#!/usr/bin/env bash
# ibv_srq_pingpong -q 16: 16 RC QPs sharing one shared receive queue.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh" "$@"
sv_pair ibv_srq_pingpong -q 16
