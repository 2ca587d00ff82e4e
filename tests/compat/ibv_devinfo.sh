#!/usr/bin/env bash
# ibv_devinfo -v shows our device with an active port and a non-zero LID.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh" "$@"
sv_single ibv_devinfo -v
grep -Eq "hca_id:[[:space:]]*$SV_DEV\$" "$SV_OUT" || sv_fail "ibv_devinfo shows no hca_id $SV_DEV"
grep -Eq "state:[[:space:]]*PORT_ACTIVE" "$SV_OUT" || sv_fail "port is not PORT_ACTIVE"
lid=$(awk "/port_lid:/ { print \$2; exit }" "$SV_OUT")
if ! [[ $lid =~ ^[0-9]+$ ]] || ((10#$lid == 0)); then
  sv_fail "port_lid is ${lid:-missing}, not non-zero"
fi
sv_log "PASS: $SV_DEV port PORT_ACTIVE, port_lid $lid"
