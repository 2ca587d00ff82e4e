#!/usr/bin/env bash
# ibv_rc_pingpong -N (--new_send): the ibv_wr_* post-send API on an extended QP.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh" "$@"
sv_pair ibv_rc_pingpong -n 1000 -N
