#!/usr/bin/env bash
# ibv_rc_pingpong -c (every received buffer checked) under fault injection
# (SOFTVERBS_FAULT, set by ctest; docs/observability.md): frames are
# dropped, duplicated, corrupted and delayed below RC, which recovers.
# Passes when both sides finish, no buffer was found wrong ("invalid
# data"), and the channels' own counts (SOFTVERBS_DEBUG=2, at their close)
# show that frames were in fact dropped, duplicated, corrupted and delayed.
#
# A ping-pong has no closing handshake: when the ACK of the last message
# is lost, its sender waits for it after its peer has gone and ends with
# RETRY_EXC_ERR, as it would on a lossy IB fabric.  That outcome alone (the
# other side done, this one failing with status 12 on its last exchange)
# is retried, with the next seed, at most twice.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh" "$@"
[[ -n ${SOFTVERBS_FAULT:-} ]] || sv_fail "SOFTVERBS_FAULT is not set"
export SOFTVERBS_DEBUG=2
iters=400
spec=$SOFTVERBS_FAULT

# Did the run fail only by losing its last ACK?  One side printed its
# result, the other failed with RETRY_EXC_ERR.
last_ack_lost() {
  local logs=("$SV_TMP/server.log" "$SV_TMP/client.log")
  grep -qh "$iters iters in" "${logs[@]}" &&
    grep -qh "Failed status transport retry counter exceeded (12)" "${logs[@]}"
}

for ((try = 1; ; try++)); do
  export SOFTVERBS_FAULT="$spec,seed=$((try * 1000))"
  if (sv_pair ibv_rc_pingpong -c -s 4096 -n "$iters"); then
    break
  fi
  if ((try == 3)) || ! last_ack_lost; then
    sv_fail "ibv_rc_pingpong failed"
  fi
  sv_log "the last ACK was lost after the peer finished; again with another seed"
  SV_PORT=$(sv_free_port)
done
if grep -h "invalid data" "$SV_TMP/server.log" "$SV_TMP/client.log"; then
  sv_fail "a received buffer was wrong"
fi
# "fault: tcp channel closed: F frames, D dropped, U duplicated, C corrupted, L delayed; ..."
read -r dropped duped corrupted delayed < <(grep -h "fault: .* channel closed:" "$SV_TMP/server.log" "$SV_TMP/client.log" |
  awk '{ for (i = 2; i <= NF; i++) { w = $i; sub(/[,;]$/, "", w);
         if (w == "dropped") d += $(i - 1); if (w == "duplicated") u += $(i - 1);
         if (w == "corrupted") c += $(i - 1); if (w == "delayed") l += $(i - 1) } }
       END { print d + 0, u + 0, c + 0, l + 0 }')
sv_log "frames dropped $dropped, duplicated $duped, corrupted $corrupted, delayed $delayed"
((dropped > 0 && duped > 0 && corrupted > 0 && delayed > 0)) || sv_fail "not every fault was injected"
