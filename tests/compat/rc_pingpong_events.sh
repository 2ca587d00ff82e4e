#!/usr/bin/env bash
# ibv_rc_pingpong -e: both sides sleep on CQ events (completion channel) instead of polling.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh" "$@"
sv_pair ibv_rc_pingpong -n 1000 -e
