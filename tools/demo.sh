#!/usr/bin/env bash
# The demo (`make demo`): Debian's unmodified RDMA programs over softverbs,
# no RDMA hardware needed.  First ibv_devinfo shows the software device, then
# ibv_rc_pingpong runs as server and client on 127.0.0.1 (a free TCP port),
# both under `timeout`, and prints what each side measured.  Exits non-zero
# if either side fails.
#
#   tools/demo.sh [BUILD_DIR]      (default: build, as `make` builds it)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd -P)
build=${1:-$root/build}

# The server/client logic is shared with the compat tests.
# shellcheck source=../tests/compat/lib.sh source-path=SCRIPTDIR
. "$root/tests/compat/lib.sh" "$build"

echo "== softverbs demo: libraries from $SV_LIB"
echo
echo "== ibv_devinfo"
sv_single ibv_devinfo
echo
echo "== ibv_rc_pingpong -n 1000: server and client on $SV_HOST, TCP port $SV_PORT"
sv_pair ibv_rc_pingpong -n 1000
echo
echo "== demo OK: Debian's ibv_rc_pingpong ran over softverbs"
