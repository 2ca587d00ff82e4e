#!/usr/bin/env bash
# ibv_uc_pingpong: UC (unreliable connected) send/recv ping-pong.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh" "$@"
sv_pair ibv_uc_pingpong
