#!/usr/bin/env bash
# ucx_info -d under softverbs run lists softverbs0 with rc_verbs and ud_verbs.
set -euo pipefail
command -v ucx_info >/dev/null || { echo "skip: ucx_info missing (scripts/deps.sh consumers)"; exit 77; }
[[ $(id -u) -eq 0 ]] || { echo "skip: needs root (a private mount namespace)"; exit 77; }
out=$(timeout 60 "$1/bin/softverbs" run ucx_info -d 2>&1)
# The transports listed inside the softverbs0 memory domain.
tls=$(awk '/Memory domain:/ { md = $NF } md == "softverbs0" && /Transport:/ { print $NF }' <<<"$out" | sort -u | tr '\n' ' ')
echo "softverbs0 transports: $tls"
[[ $tls == *rc_verbs* && $tls == *ud_verbs* ]]
