#!/usr/bin/env bash
# ibv_ud_pingpong -s 1024: UD datagrams through address handles.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh" "$@"
sv_pair ibv_ud_pingpong -s 1024
