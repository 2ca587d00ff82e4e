#!/usr/bin/env bash
# ucx_perftest, server and client on 127.0.0.1, each under softverbs run,
# over the UCX transports given (UCX_TLS syntax).
#
#   ucx_perftest.sh BUILD TLS [TEST [ARGS...]]   default: tag_lat -n 10000
set -euo pipefail
bin=$1 tls=$2 port=13380
shift 2
(($#)) || set -- tag_lat -n 10000
test=$1
shift
command -v ucx_perftest >/dev/null || { echo "skip: ucx_perftest missing (scripts/deps.sh consumers)"; exit 77; }
[[ $(id -u) -eq 0 ]] || { echo "skip: needs root (a private mount namespace)"; exit 77; }
export UCX_TLS=$tls UCX_NET_DEVICES=softverbs0:1
log=$(mktemp -d)
trap 'kill "$srv" 2>/dev/null || true; rm -rf "$log"' EXIT
timeout 90 "$bin/bin/softverbs" run ucx_perftest -p $port -t "$test" "$@" >"$log/server" 2>&1 &
srv=$!
# (a fixed wait was too short on two loaded cores: the client found no listener)
for _ in $(seq 1 300); do
  ss -ltnH "sport = :$port" 2>/dev/null | grep -q . && break
  kill -0 "$srv" 2>/dev/null || break
  sleep 0.1
done
if ! timeout 60 "$bin/bin/softverbs" run ucx_perftest 127.0.0.1 -p $port -t "$test" "$@" >"$log/client" 2>&1; then
  echo "FAIL: client"; cat "$log/client"; echo "--- server"; cat "$log/server"; exit 1
fi
wait "$srv" || { echo "FAIL: server"; cat "$log/server"; exit 1; }
grep Final "$log/client"
