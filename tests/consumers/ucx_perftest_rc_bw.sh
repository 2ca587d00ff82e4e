#!/usr/bin/env bash
# Bandwidth over rc_verbs: tag_bw through UCP (UD to wire up, as in
# ucx_perftest_rc.sh), then put_bw through UCT alone, zero-copy RDMA writes.
set -euo pipefail
here=$(dirname "$0")
bash "$here/ucx_perftest.sh" "$1" rc_verbs,ud_verbs:aux,self tag_bw -n 2000 -s 65536
bash "$here/ucx_perftest.sh" "$1" rc_verbs put_bw -x rc_verbs -d softverbs0:1 -D zcopy -n 2000 -s 65536
