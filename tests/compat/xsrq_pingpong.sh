#!/usr/bin/env bash
# ibv_xsrq_pingpong: XRC initiator and target QPs delivering to XRC SRQs
# (an XRC domain on /tmp/xrc_domain); polling, then sleeping on events with
# 64 KiB messages.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh" "$@"
sv_pair --check success ibv_xsrq_pingpong -n 100
sv_pair --check success ibv_xsrq_pingpong -n 100 -e -s 65536
