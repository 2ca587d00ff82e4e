#!/usr/bin/env bash
# Open MPI 4.1 on softverbs: pingpong.c with two ranks on one host, mpirun
# under softverbs run, over one of Open MPI's RDMA paths.
#
#   tests/mpi/run.sh BUILD_DIR SRC_DIR PATH_NAME [SANITIZE]
#
# PATH_NAME: ucx_rc, ucx_ud (pml ucx), ofi (pml cm, mtl ofi, verbs;ofi_rxm),
# openib (btl openib, pml ob1).  Exits 0, 77 (skip) or 1.
set -euo pipefail
bin=$1 src=$2 path=$3 sanitize=${4:-}
for t in mpirun mpicc; do
  command -v $t >/dev/null || { echo "skip: $t missing (scripts/deps.sh consumers)"; exit 77; }
done
[[ $(id -u) -eq 0 ]] || { echo "skip: needs root (a private mount namespace)"; exit 77; }
# mpirun starts the ranks through orted, uninstrumented programs of Open
# MPI's: preloading the sanitizer runtime into them is not tried yet.
[[ -z $sanitize ]] || { echo "skip: sanitized build ($sanitize): preloading the sanitizer runtime into mpirun, orted and the ranks is not supported yet"; exit 77; }

ucx=(-x UCX_NET_DEVICES=softverbs0:1 --mca pml ucx)
iters=()
case $path in
  ucx_rc) args=("${ucx[@]}" -x "UCX_TLS=rc_verbs,ud_verbs:aux,self") ;;
  # UD is slow under UCX here (docs/consumers.md, "Open MPI"): fewer iterations.
  ucx_ud) args=("${ucx[@]}" -x "UCX_TLS=ud_verbs,self"); iters=(1000 10) ;;
  ofi) args=(--mca pml cm --mca mtl ofi -x "FI_PROVIDER=verbs;ofi_rxm") ;;
  # Open MPI 4.1 leaves InfiniBand ports to UCX unless told otherwise.
  openib) args=(--mca pml ob1 --mca btl "openib,self" --mca btl_openib_allow_ib 1
                --mca btl_openib_warn_no_device_params_found 0) ;;
  *) echo "unknown path $path"; exit 2 ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpicc -O2 -Wall -Wextra -Werror -o "$tmp/pingpong" "$src/tests/mpi/pingpong.c"
if ! timeout -k 5 120 "$bin/bin/softverbs" run mpirun --allow-run-as-root -np 2 --bind-to none \
     -x LD_LIBRARY_PATH "${args[@]}" "$tmp/pingpong" "${iters[@]}" >"$tmp/out" 2>&1; then
  echo "FAIL: mpirun ${args[*]}"; cat "$tmp/out"; exit 1
fi
cat "$tmp/out"
grep -q '^PASS' "$tmp/out" || { echo "FAIL: no PASS line"; exit 1; }
