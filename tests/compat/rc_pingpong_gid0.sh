#!/usr/bin/env bash
# ibv_rc_pingpong -g 0: both sides use GID index 0 (GRH, global routing).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh" "$@"
sv_pair ibv_rc_pingpong -n 1000 -g 0
