# shellcheck shell=bash
# What a good fi_pingpong run looks like, shared by tests/libfabric (one
# host) and tests/net (across hosts).
#
#   sv_fi_provider EP        the -p argument for endpoint type EP
#   sv_fi_figures EP LOG     print LOG's table rows; false unless the table is
#                            complete for EP and LOG reports no error

# msg and dgram are the verbs provider's own; rdm is ofi_rxm layered on its
# msg endpoints (libfabric 1.17 names the stack "verbs;ofi_rxm").
sv_fi_provider() {
  case $1 in
    rdm) echo "verbs;ofi_rxm" ;;
    *) echo verbs ;;
  esac
}

# fi_pingpong's default sizes: up to 1m, but a dgram message must fit the
# path MTU (4k on softverbs0).
sv_fi_sizes() {
  case $1 in
    dgram) echo "64 256 1k 4k" ;;
    *) echo "64 256 1k 4k 64k 1m" ;;
  esac
}

sv_fi_figures() {
  local ep=$1 log=$2 size
  grep -Eq '^bytes +#sent +#ack' "$log" || return 1
  ! grep -Eq '\[error\]|Unexpected|Error|failed' "$log" || return 1
  for size in $(sv_fi_sizes "$ep"); do
    # every message acknowledged: "#ack" is "=#sent"
    awk -v s="$size" '$1 == s && $3 == "=" $2 { f = 1 } END { exit !f }' "$log" || return 1
  done
  grep -E '^(bytes|[0-9]+[km]? )' "$log"
}
