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

# shellcheck source=tests/mpi/paths.sh
. "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
sv_mpi_path "$path" || { echo "unknown path $path"; exit 2; }
args=("${SV_MPI_ARGS[@]}")
iters=("${SV_MPI_ITERS[@]}")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpicc -O2 -Wall -Wextra -Werror -o "$tmp/pingpong" "$src/tests/mpi/pingpong.c"
if ! timeout -k 5 120 "$bin/bin/softverbs" run mpirun --allow-run-as-root -np 2 --bind-to none \
     -x LD_LIBRARY_PATH "${args[@]}" "$tmp/pingpong" "${iters[@]}" >"$tmp/out" 2>&1; then
  echo "FAIL: mpirun ${args[*]}"; cat "$tmp/out"; exit 1
fi
cat "$tmp/out"
grep -q '^PASS' "$tmp/out" || { echo "FAIL: no PASS line"; exit 1; }
