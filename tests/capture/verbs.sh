#!/usr/bin/env bash
# verbs.sh BUILD [tcp]: the device's own verbs tests that make every kind of
# packet (SEND with immediate and invalidate, WRITE with immediate, READ,
# the atomics, NAKs of each kind, RNR NAKs and retransmissions, UC, UD with
# GRH, XRC, SRQ, pulled SENDs, fences), run with SOFTVERBS_PCAP; then every
# capture must dissect in tshark with no malformed packet, each ICRC must be
# right, and each message's packets must follow the wire rules (check.py
# any).  With tcp: SOFTVERBS_TRANSPORT=tcp.  Skips (77) without tshark.
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
progs=(send_imm send_recv inline rdma_write rdma_write_imm rdma_read rdma_zero_len atomic_cas
       atomic_faa atomic_write mw ops_mixed_order fence send_large_sge rnr_hold err_rnr_exc
       err_rem_access_rkey err_nak_acks_earlier uc_ops ud_grh srq xrc)

command -v tshark >/dev/null || { echo "skip: tshark is not installed (scripts/deps.sh tools)"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 is not installed"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/softverbs-capture-verbs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export SOFTVERBS_PCAP=$tmp
[[ ${2:-} == tcp ]] && export SOFTVERBS_TRANSPORT=tcp

for p in "${progs[@]}"; do
  rc=0
  timeout -k 5 90 "$build/tests/verbs/verbs_$p" >"$tmp/$p.log" 2>&1 || rc=$?
  if ((rc == 77)); then
    echo "verbs_$p: skipped"
  elif ((rc)); then
    cat "$tmp/$p.log"
    echo "FAIL: verbs_$p exited with $rc under capture"
    exit 1
  fi
  if grep -qE 'runtime error|Sanitizer|ThreadSanitizer' "$tmp/$p.log"; then
    cat "$tmp/$p.log"
    echo "FAIL: sanitizer report from verbs_$p under capture"
    exit 1
  fi
done
shopt -s nullglob
files=("$tmp"/*.pcap)
((${#files[@]} >= ${#progs[@]} / 2)) || { echo "FAIL: only ${#files[@]} captures"; exit 1; }
python3 "$here/check.py" any 1024 "${files[@]}" || { echo "FAIL: the captures break the rules"; exit 1; }
echo "pass: ${#files[@]} captures of ${#progs[@]} programs"
