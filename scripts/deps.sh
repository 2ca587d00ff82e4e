#!/usr/bin/env bash
# Installs the Debian packages softverbs needs, and only the missing ones.
#
#   scripts/deps.sh [GROUP...]   install what GROUPs need (default: all)
#   scripts/deps.sh --check [GROUP...]   list what is missing, exit 1 if anything is
#   scripts/deps.sh --list [GROUP...]    print the package names, one a line
#
# Groups: build, run, tools, sanitize, consumers, bench, all (all but bench).
# This file is the one place that names the project's Debian packages.  It is
# fast (one dpkg-query call) and idempotent when everything is installed.  As
# root it runs apt-get itself (apt-get update first, only when something is
# missing); otherwise it prints the exact command to run and fails.
set -euo pipefail

# Compiling the libraries (the headers are Debian's rdma-core ones; installing
# the real ibverbs-providers / rdma-core as dependencies is fine: our
# build/lib wins through LD_LIBRARY_PATH).
PKGS_build=(cmake make gcc libc6-dev pkg-config libibverbs-dev librdmacm-dev)
# Debian's unmodified RDMA programs that the demo and the compat tests run.
PKGS_run=(ibverbs-utils rdmacm-utils perftest libfabric-bin)
# Tools the test scripts use (ss/ip, ps/pkill, killall/fuser, setarch/taskset;
# tshark opens the packet captures of tests/capture; gdb prints the threads
# of a program that hangs, tests/watchdog.sh).
PKGS_tools=(iproute2 procps psmisc util-linux tshark gdb)
# Sanitizer and fuzzer runtimes beyond gcc's own libasan/libubsan/libtsan.
PKGS_sanitize=(clang libclang-rt-14-dev)
# Other programs that use RDMA, run unmodified: by tests/consumers under
# `softverbs run` (UCX's ucx_info, ucx_perftest; bench compares with UCX
# too), by tests/qperf and tests/net (qperf), and rdma-core's own pyverbs
# test suite (tests/pyverbs), Open MPI's mpirun and mpicc (tests/mpi); and
# plain socket programs over rsockets through Debian's librspreload: socat
# (tests/cm/tools.sh rs_socat, tests/net rs_socat) and iperf3
# (tests/cm/tools.sh rs_iperf3).
PKGS_consumers=(ucx-utils qperf python3-pyverbs openmpi-bin libopenmpi-dev socat iperf3)
# `make bench`: the peers softverbs is compared with, and the plot.
PKGS_bench=(gnuplot-nox)

usage() {
  sed -n '2,13s/^# \{0,1\}//p' "$0"
}

mode=install
case "${1:-}" in
  --check) mode=check; shift ;;
  --list) mode=list; shift ;;
  -h|--help) usage; exit 0 ;;
esac
[[ $# -gt 0 ]] || set -- all

want=()
for group in "$@"; do
  case "$group" in
    build) want+=("${PKGS_build[@]}") ;;
    run) want+=("${PKGS_run[@]}") ;;
    tools) want+=("${PKGS_tools[@]}") ;;
    sanitize) want+=("${PKGS_sanitize[@]}") ;;
    consumers) want+=("${PKGS_consumers[@]}") ;;
    bench) want+=("${PKGS_build[@]}" "${PKGS_run[@]}" "${PKGS_tools[@]}" "${PKGS_consumers[@]}" "${PKGS_bench[@]}") ;;
    all) want+=("${PKGS_build[@]}" "${PKGS_run[@]}" "${PKGS_tools[@]}" "${PKGS_sanitize[@]}" "${PKGS_consumers[@]}") ;;
    *) echo "deps.sh: unknown group '$group' (build, run, tools, sanitize, consumers, bench, all)" >&2; exit 2 ;;
  esac
done

if [[ $mode == list ]]; then
  printf '%s\n' "${want[@]}" | awk '!seen[$0]++'
  exit 0
fi

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "deps.sh: not a Debian system (no dpkg-query); make sure the equivalents of these are installed:" >&2
  echo "  ${want[*]}" >&2
  exit 0
fi

# One dpkg-query for all: packages it does not know at all are missing too.
missing=()
mapfile -t installed < <(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${want[@]}" 2>/dev/null |
                         awk '$2 == "installed" { sub(/:.*/, "", $1); print $1 }')
for p in "${want[@]}"; do
  found=0
  for q in "${installed[@]}"; do
    if [[ $p == "$q" ]]; then found=1; break; fi
  done
  if [[ $found == 0 ]] && [[ " ${missing[*]} " != *" $p "* ]]; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  [[ $mode == check ]] && echo "deps.sh: all ${#want[@]} packages installed"
  exit 0
fi

if [[ $mode == check ]]; then
  echo "deps.sh: missing Debian packages: ${missing[*]}"
  exit 1
fi

if [[ $(id -u) -ne 0 ]]; then
  {
    echo "deps.sh: these Debian packages are missing: ${missing[*]}"
    echo "deps.sh: install them as root, then run make again:"
    echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}"
  } >&2
  exit 1
fi

echo "deps.sh: installing missing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# wireshark-common asks whether non-root users may capture: no, without asking
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
apt_opts=(-y -q -o DPkg::Lock::Timeout=300 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
apt-get "${apt_opts[@]}" update </dev/null
apt-get "${apt_opts[@]}" install --no-install-recommends "${missing[@]}" </dev/null

# Check the result, so that a package that did not install fails here rather
# than as a puzzling build or test error later.
if ! bash "$0" --check "$@" >/dev/null; then
  bash "$0" --check "$@" >&2
  exit 1
fi
echo "deps.sh: done"
