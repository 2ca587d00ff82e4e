#!/usr/bin/env bash
# ibv_rc_pingpong, plain: RC send/recv ping-pong, 1000 iterations.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh" "$@"
sv_pair ibv_rc_pingpong -n 1000
