#!/usr/bin/env bash
# ibv_rc_pingpong -s 65536: 64 KiB messages, many MTU-sized packets each.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh" "$@"
sv_pair ibv_rc_pingpong -n 1000 -s 65536
