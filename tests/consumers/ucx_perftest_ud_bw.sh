#!/usr/bin/env bash
# Bandwidth over ud_verbs: tag_bw, and ucp_put_bw (UD has no RDMA write:
# UCP emulates it with active messages).
set -euo pipefail
here=$(dirname "$0")
bash "$here/ucx_perftest.sh" "$1" ud_verbs,self tag_bw -n 200 -s 65536
bash "$here/ucx_perftest.sh" "$1" ud_verbs,self ucp_put_bw -n 200 -s 65536
