#!/usr/bin/env bash
# The two test hosts of the cross-host measurements: network namespaces
# svb-a (10.78.0.1/24) and svb-b (10.78.0.2/24) joined by a veth pair, both
# ends named svb0 and created directly inside the namespaces.  Only these
# addresses, inside namespaces made here, are ever used.  Programs run there
# through bench_nswrap (lib.sh), which also gives them fresh /dev/shm and /tmp.
# Sourced by run.sh (needs lib.sh).
# Sourced: its variables are used by the other scripts.
# shellcheck disable=SC2034

# Sets SVB_VETH_OK=1 when the hosts are up, else SVB_VETH_WHY.
bench_netns_up() {
  SVB_VETH_OK=0
  SVB_VETH_WHY=""
  if [[ $(id -u) -ne 0 ]]; then
    SVB_VETH_WHY="not root: no network namespaces"
    return 1
  fi
  if ! command -v ip >/dev/null || ! command -v unshare >/dev/null; then
    SVB_VETH_WHY="ip (iproute2) or unshare (util-linux) missing"
    return 1
  fi
  bench_netns_down
  local i
  if ! ip netns add "$SVB_NS_A" 2>"$BENCH_WORK/logs/netns.err" ||
     ! ip netns add "$SVB_NS_B" 2>>"$BENCH_WORK/logs/netns.err"; then
    SVB_VETH_WHY="ip netns add failed: $(tail -n 1 "$BENCH_WORK/logs/netns.err")"
    bench_netns_down
    return 1
  fi
  if ! ip link add name svb0 netns "$SVB_NS_A" type veth peer name svb0 netns "$SVB_NS_B" \
       2>>"$BENCH_WORK/logs/netns.err"; then
    SVB_VETH_WHY="cannot create the veth pair: $(tail -n 1 "$BENCH_WORK/logs/netns.err")"
    bench_netns_down
    return 1
  fi
  ip -n "$SVB_NS_A" link set lo up
  ip -n "$SVB_NS_B" link set lo up
  ip -n "$SVB_NS_A" addr add "$SVB_ADDR_A/24" dev svb0
  ip -n "$SVB_NS_B" addr add "$SVB_ADDR_B/24" dev svb0
  ip -n "$SVB_NS_A" link set svb0 up
  ip -n "$SVB_NS_B" link set svb0 up
  for ((i = 0; i < 50; i++)); do
    if ip -n "$SVB_NS_A" -o link show dev svb0 | grep -q 'state UP' &&
       ip -n "$SVB_NS_B" -o link show dev svb0 | grep -q 'state UP'; then
      break
    fi
    sleep 0.1
  done
  # A host must work as run.sh uses it: fresh tmpfs mounts, and a TCP
  # connection from one host to the other.
  bench_nswrap "$SVB_NS_B"
  if ! timeout 10 "${NSW[@]}" sh -c 'mountpoint -q /dev/shm && mountpoint -q /tmp' \
       >"$BENCH_WORK/logs/netns.mount" 2>&1; then
    SVB_VETH_WHY="cannot give a host fresh /dev/shm and /tmp (unshare -m): $(bench_why "$BENCH_WORK/logs/netns.mount")"
    bench_netns_down
    return 1
  fi
  bench_next_port
  SRV=("$BENCH_BIN/tcp_ref" server -b "$SVB_ADDR_A" -p "$PORT")
  CLI=("$BENCH_BIN/tcp_ref" client -a "$SVB_ADDR_A" -p "$PORT" -m lat -s 8 -n 10)
  if ! bench_pair netns-check "$SVB_NS_A" "$SVB_NS_B" "$PORT" 10; then
    SVB_VETH_WHY="no TCP from $SVB_NS_B to $SVB_NS_A: $PAIR_ERR"
    bench_netns_down
    return 1
  fi
  SVB_VETH_OK=1
  bench_log "test hosts up: $SVB_NS_A $SVB_ADDR_A <-> $SVB_NS_B $SVB_ADDR_B (veth)"
}

bench_netns_down() {
  local ns
  for ns in "$SVB_NS_A" "$SVB_NS_B"; do
    if ip netns list 2>/dev/null | awk '{ print $1 }' | grep -qx "$ns"; then
      ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
      ip netns del "$ns" 2>/dev/null
    fi
  done
  SVB_VETH_OK=0
}
