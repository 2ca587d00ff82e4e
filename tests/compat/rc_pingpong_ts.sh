#!/usr/bin/env bash
# ibv_rc_pingpong -t (--ts): extended CQ with completion timestamps (ibv_start_poll...).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh" "$@"
sv_pair ibv_rc_pingpong -n 1000 -t
