# shellcheck shell=bash
# shellcheck disable=SC2034  # SV_MPI_* are set for the caller to read
# The Open MPI paths the tests run, by name: sv_mpi_path NAME sets
# SV_MPI_ARGS (mpirun options) and SV_MPI_ITERS (pingpong.c's arguments).
# Used by tests/mpi/run.sh (one host) and tests/net/cases.sh (across hosts).
#   ucx_rc   pml ucx over rc_verbs (ud_verbs to wire up)
#   ucx_ud   pml ucx over ud_verbs (slow here: fewer iterations)
#   ofi      pml cm, mtl ofi, libfabric's verbs;ofi_rxm
#   openib   pml ob1, btl openib (Open MPI 4.1 leaves InfiniBand ports to
#            UCX unless btl_openib_allow_ib is set)
#   vader, tcp  Open MPI's own transports, for comparison (no softverbs)
sv_mpi_path() {
  local ucx=(-x UCX_NET_DEVICES=softverbs0:1 --mca pml ucx)
  SV_MPI_ITERS=()
  case $1 in
    ucx_rc) SV_MPI_ARGS=("${ucx[@]}" -x "UCX_TLS=rc_verbs,ud_verbs:aux,self") ;;
    ucx_ud) SV_MPI_ARGS=("${ucx[@]}" -x "UCX_TLS=ud_verbs,self"); SV_MPI_ITERS=(1000 10) ;;
    ofi) SV_MPI_ARGS=(--mca pml cm --mca mtl ofi -x "FI_PROVIDER=verbs;ofi_rxm") ;;
    openib) SV_MPI_ARGS=(--mca pml ob1 --mca btl "openib,self" --mca btl_openib_allow_ib 1
                         --mca btl_openib_warn_no_device_params_found 0) ;;
    vader) SV_MPI_ARGS=(--mca pml ob1 --mca btl "vader,self") ;;
    tcp) SV_MPI_ARGS=(--mca pml ob1 --mca btl "tcp,self") ;;
    *) return 1 ;;
  esac
}
