#!/usr/bin/env bash
# Test hosts for softverbs across hosts: two network namespaces joined by a
# veth pair.  Nothing but that link connects them: each command run in a host
# also gets its own mount and UTS namespaces (hostname = the namespace's
# name) with fresh tmpfs mounts on /dev/shm and /tmp (abstract unix sockets
# are per network namespace already).
#
#   hosts.sh up                  create the hosts (idempotent)
#   hosts.sh down                remove them
#   hosts.sh exec HOST CMD...    run CMD in HOST (h1 or h2, also 1 or 2)
#   hosts.sh kill-link [HOST]    take HOST's end of the link down (default h1):
#                                the host disappears from the other one's view
#   hosts.sh link-up [HOST]      bring it back (default h1)
#   hosts.sh status              show the hosts, their addresses and links
#   hosts.sh ns HOST             print HOST's namespace name
#   hosts.sh gc                  remove hosts left behind by test runs that died
#
# Options (before the command) and environment:
#   -i ID, SOFTVERBS_HOSTS_ID    name the pair sv-ID-h1 / sv-ID-h2 (default: no
#                                ID, sv-h1 / sv-h2).  The tests use p<PID>, so
#                                parallel runs never share a pair and `gc`
#                                knows which pairs belong to dead processes.
#   SOFTVERBS_HOSTS_KEEP         colon-separated directories under /tmp that
#                                stay visible (read-only) in a host's fresh /tmp,
#                                e.g. a build directory in /tmp; `exec` also
#                                keeps the directories named in LD_LIBRARY_PATH
#                                and the current directory when they are in /tmp.
#
# Addresses: h1 is 10.77.0.1/24, h2 is 10.77.0.2/24, on interface sv0 in
# each namespace; lo is up in both.  Every pair uses the same addresses: they
# live only inside the pair's own namespaces, so pairs cannot collide.  In a
# host, softverbs picks the veth address by itself (first up non-loopback
# interface): LID 0x0001 / 0x0002, GID ::ffff:10.77.0.1 / ::ffff:10.77.0.2.
#
# Exit codes: 0 done, 1 error, 2 usage, 77 cannot run here (not root, no
# `ip netns`, no unshare): the tests skip on 77.
set -euo pipefail

SVH_NET=10.77.0
SVH_IF=sv0

svh_die() { echo "hosts.sh: $*" >&2; exit 1; }
svh_skip() { echo "hosts.sh: SKIP: $*" >&2; exit 77; }
svh_usage() { sed -n '2,36s/^# \{0,1\}//p' "$0" >&2; exit 2; }

id=${SOFTVERBS_HOSTS_ID:-}
while [[ $# -gt 0 ]]; do
  case $1 in
    -i) [[ $# -ge 2 ]] || svh_usage; id=$2; shift 2 ;;
    -h|--help) svh_usage ;;
    *) break ;;
  esac
done
[[ $# -ge 1 ]] || svh_usage
[[ -z $id || $id =~ ^[A-Za-z0-9_.]+$ ]] || svh_die "bad ID '$id' (letters, digits, _ and . only)"
cmd=$1; shift

# Names of the two namespaces of this pair.
svh_prefix=sv-${id:+$id-}
ns_of() {
  case $1 in
    h1|1) echo "${svh_prefix}h1" ;;
    h2|2) echo "${svh_prefix}h2" ;;
    *) svh_die "unknown host '$1' (h1 or h2)" ;;
  esac
}
NS1=$(ns_of h1)
NS2=$(ns_of h2)

# Can this process create and enter namespaces at all?
svh_check() {
  [[ $(id -u) -eq 0 ]] || svh_skip "needs root to create network namespaces (running as uid $(id -u))"
  command -v ip >/dev/null 2>&1 || svh_skip "ip (iproute2) is not installed"
  ip netns list >/dev/null 2>&1 || svh_skip "'ip netns' is not available here"
  command -v unshare >/dev/null 2>&1 || svh_skip "unshare (util-linux) is not installed"
}

ns_exists() { [[ -e /run/netns/$1 ]] || ip netns list 2>/dev/null | awk '{ print $1 }' | grep -qx "$1"; }

ns_del() {
  if ns_exists "$1"; then
    # Processes still inside keep the namespace alive, not its name.
    ip netns pids "$1" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    ip netns del "$1" 2>/dev/null || true
  fi
}

# Is the pair there and configured as `up` leaves it?
pair_ok() {
  local n i
  for i in 1 2; do
    n=$(ns_of "$i")
    ns_exists "$n" || return 1
    ip -n "$n" -o -4 addr show dev "$SVH_IF" 2>/dev/null | grep -q " $SVH_NET.$i/24 " || return 1
    ip -n "$n" -o link show dev "$SVH_IF" 2>/dev/null | grep -q '[<,]UP[,>]' || return 1
    ip -n "$n" -o link show dev lo 2>/dev/null | grep -q '[<,]UP[,>]' || return 1
  done
}

do_down() {
  ns_del "$NS1"
  ns_del "$NS2"
}

do_up() {
  svh_check
  # Namespaces of test runs that died (SIGKILL, crash) go first.
  do_gc
  if pair_ok; then
    return 0
  fi
  do_down                      # a half-made pair: start over
  ip netns add "$NS1"
  ip netns add "$NS2"
  # Create the veth ends directly in the namespaces: no name in the root
  # namespace, so parallel pairs never collide.
  ip link add name "$SVH_IF" netns "$NS1" type veth peer name "$SVH_IF" netns "$NS2" ||
    { do_down; svh_die "cannot create the veth pair (is the veth module available?)"; }
  local i n
  for i in 1 2; do
    n=$(ns_of "$i")
    ip -n "$n" link set lo up
    ip -n "$n" addr add "$SVH_NET.$i/24" dev "$SVH_IF"
    ip -n "$n" link set "$SVH_IF" up
  done
  # Wait for the link to come up (carrier) and for the addresses to leave
  # the tentative state, so that the first connect does not fail.
  for ((i = 0; i < 50; i++)); do
    if ip -n "$NS1" -o link show dev "$SVH_IF" | grep -q 'state UP' &&
       ip -n "$NS2" -o link show dev "$SVH_IF" | grep -q 'state UP'; then
      break
    fi
    sleep 0.1
  done
  pair_ok || { do_down; svh_die "the hosts did not come up"; }
}

# Is process $1 alive (a zombie is not)?
pid_alive() {
  local st
  st=$(sed -n 's/^.*) \(.\).*/\1/p' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $st && $st != Z && $st != X ]]
}

# Remove pairs named sv-p<PID>-h1/h2 whose PID is no longer alive.
do_gc() {
  local n pid
  for n in $(ip netns list 2>/dev/null | awk '{ print $1 }'); do
    [[ $n =~ ^sv-p([0-9]+)-h[12]$ ]] || continue
    pid=${BASH_REMATCH[1]}
    if ! pid_alive "$pid"; then
      echo "hosts.sh: removing $n, left behind by process $pid" >&2
      ns_del "$n"
    fi
  done
}

# Directories under /tmp that must stay visible in the host's fresh /tmp.
keep_dirs() {
  local d list=() out=() seen=" "
  IFS=: read -r -a list <<<"${SOFTVERBS_HOSTS_KEEP:-}:${LD_LIBRARY_PATH:-}:$PWD"
  # a sanitizer's suppressions file (scripts/test.sh names one for TSan)
  if [[ ${TSAN_OPTIONS:-} =~ suppressions=([^ :]+) ]]; then
    list+=("$(dirname "${BASH_REMATCH[1]}")")
  fi
  for d in "${list[@]}"; do
    [[ -n $d && -d $d ]] || continue
    d=$(cd "$d" && pwd -P)
    [[ $d == /tmp/* ]] || continue
    [[ $seen == *" $d "* ]] && continue
    seen+="$d "
    out+=("$d")
  done
  printf '%s\n' "${out[@]}"
}

do_exec() {
  [[ $# -ge 2 ]] || svh_usage
  local n keep
  n=$(ns_of "$1"); shift
  svh_check
  ns_exists "$n" || svh_die "host $n does not exist: run '$0 up' first"
  keep=$(keep_dirs | paste -sd: -)
  # In the host: a private mount namespace and its own hostname (the
  # namespace's name: Open MPI tells nodes apart by it); fresh /dev/shm; the kept
  # directories are bind-mounted aside (on the new /dev/shm), the fresh /tmp
  # is mounted, and they are moved back into it read-only.
  # shellcheck disable=SC2016
  exec ip netns exec "$n" unshare -m -u --propagation private sh -c '
    set -e
    hostname "$1"
    keep=$2; shift 2
    mount -t tmpfs -o mode=1777,size=50% sv-shm /dev/shm
    i=0
    IFS=:
    for d in $keep; do
      i=$((i + 1))
      mkdir -p /dev/shm/.sv-keep/$i
      mount --bind "$d" /dev/shm/.sv-keep/$i
    done
    mount -t tmpfs -o mode=1777 sv-tmp /tmp
    i=0
    for d in $keep; do
      i=$((i + 1))
      mkdir -p "$d"
      mount --move /dev/shm/.sv-keep/$i "$d"
      mount -o remount,bind,ro "$d"
      rmdir /dev/shm/.sv-keep/$i
    done
    [ ! -d /dev/shm/.sv-keep ] || rmdir /dev/shm/.sv-keep
    unset IFS
    cd "$PWD" 2>/dev/null || cd /
    exec "$@"
  ' sv-host "$n" "$keep" "$@"
}

do_link() {
  local state=$1 n
  n=$(ns_of "${2:-h1}")
  svh_check
  ns_exists "$n" || svh_die "host $n does not exist: run '$0 up' first"
  ip -n "$n" link set "$SVH_IF" "$state"
}

do_status() {
  local i n
  for i in 1 2; do
    n=$(ns_of "$i")
    if ns_exists "$n"; then
      echo "$n:"
      ip -n "$n" -br addr show 2>/dev/null | sed 's/^/  /'
      echo "  processes: $(ip netns pids "$n" 2>/dev/null | wc -l)"
    else
      echo "$n: (absent)"
    fi
  done
}

case $cmd in
  up) do_up ;;
  down) svh_check; do_down ;;
  exec) do_exec "$@" ;;
  kill-link) do_link down "$@" ;;
  link-up) do_link up "$@" ;;
  status) do_status ;;
  ns) [[ $# -eq 1 ]] || svh_usage; ns_of "$1" ;;
  gc) svh_check; do_gc ;;
  *) svh_usage ;;
esac
