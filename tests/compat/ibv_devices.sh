#!/usr/bin/env bash
# ibv_devices lists our device.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh" "$@"
sv_single ibv_devices
grep -Eq "^[[:space:]]*${SV_DEV}[[:space:]]" "$SV_OUT" || sv_fail "ibv_devices does not list $SV_DEV"
sv_log "PASS: ibv_devices lists $SV_DEV"
