#!/usr/bin/env bash
# capture.sh BUILD PORT CASE: run a known exchange of Debian's programs with
# SOFTVERBS_PCAP set, then check each process's capture with tshark and
# check.py (every packet dissects as InfiniBand, none malformed, ICRC right;
# opcodes, PSNs and QPNs those of the exchange).  CASE:
#   rc_pingpong       ibv_rc_pingpong, 64 B: SEND only / ACK (ring records, ACK words)
#   rc_pingpong_64k   ibv_rc_pingpong, 64 KiB: pulled SENDs, 64 packets each
#   write_bw read_bw atomic_bw   perftest, same host (direct one-sided accesses)
#   ud_pingpong       ibv_ud_pingpong (UD rings or UDP)
#   tcp_rc_pingpong   ibv_rc_pingpong, 4 KiB over TCP (SOFTVERBS_TRANSPORT=tcp)
#   tcp_write_bw tcp_read_bw     perftest over TCP: segmented frames on both sides
#   cli_rc_pingpong   ibv_rc_pingpong under `softverbs run --pcap DIR`
# Skips (77) without tshark (scripts/deps.sh tools) or the program.
set -euo pipefail
build=$1 port=$2 case=$3
# shellcheck source=../compat/lib.sh
. "$(dirname "$0")/../compat/lib.sh" "$build" "$port"

command -v tshark >/dev/null || sv_skip "tshark is not installed (scripts/deps.sh tools)"
command -v python3 >/dev/null || sv_skip "python3 is not installed"
export SOFTVERBS_PCAP=$SV_TMP/pcap
mkdir -p "$SOFTVERBS_PCAP"
mtu=1024
# perftest: short runs, messages of 8 MTUs, both sides' MTU 1024
perf=(-s 8192 -m 1024 -n 8)

# a retried perftest pair (lib.sh) starts from an empty capture directory
sv_perftest_before_retry() { rm -f "$SOFTVERBS_PCAP"/*.pcap; }

case $case in
  tcp_*) export SOFTVERBS_TRANSPORT=tcp; what=${case#tcp_} ;;
  *) what=$case ;;
esac
case $what in
  rc_pingpong* | cli_rc_pingpong) what=rc_pingpong ;;
esac
case $case in
  rc_pingpong) sv_pair ibv_rc_pingpong -n 50 -s 64 ;;
  rc_pingpong_64k) sv_pair ibv_rc_pingpong -n 10 -s 65536 ;;
  tcp_rc_pingpong) sv_pair ibv_rc_pingpong -n 50 -s 4096 ;;
  ud_pingpong) sv_pair ibv_ud_pingpong -n 50 -s 512 ;;
  write_bw | tcp_write_bw) sv_perftest_retried ib_write_bw "${perf[@]}" ;;
  read_bw | tcp_read_bw) sv_perftest_retried ib_read_bw "${perf[@]}" ;;
  atomic_bw) sv_perftest_retried ib_atomic_bw -n 8 ;;
  cli_rc_pingpong)
    sv_need ibv_rc_pingpong
    dir=$SOFTVERBS_PCAP
    unset SOFTVERBS_PCAP
    rmdir "$dir"         # softverbs run makes it
    SV_SERVER=("$SV_BUILD/bin/softverbs" run --pcap "$dir" ibv_rc_pingpong -p "$SV_PORT" -n 20 -s 64)
    SV_CLIENT=("${SV_SERVER[@]}" "$SV_HOST")
    sv_run_pair || sv_fail "$PL_ERR"
    sv_status server "$SV_SRC" || sv_fail "softverbs run ibv_rc_pingpong: server"
    sv_status client "$SV_CRC" || sv_fail "softverbs run ibv_rc_pingpong: client"
    if sv_sanitizer_report "$SV_SLOG" || sv_sanitizer_report "$SV_CLOG"; then
      sv_fail "sanitizer report"
    fi
    SOFTVERBS_PCAP=$dir ;;
  *) sv_fail "unknown case $case" ;;
esac

shopt -s nullglob
files=("$SOFTVERBS_PCAP"/*.pcap)
((${#files[@]})) || sv_fail "no capture in $SOFTVERBS_PCAP"
# every packet the programs exchanged through frames is in both files; a
# direct access only in the requester's (docs/observability.md)
case $case in
  rc_pingpong* | cli_* | tcp_* | ud_pingpong) ((${#files[@]} == 2)) || sv_fail "${#files[@]} captures, expected 2" ;;
esac
python3 "$(dirname "$0")/check.py" "$what" "$mtu" "$SV_SLOG" "$SV_CLOG" "${files[@]}" ||
  sv_fail "the captures do not show the exchange"
# and the checker sees a damaged packet: one byte of the first
# packet's payload flipped (file header, record header, 54 bytes of headers, 12 in)
if [[ $case == rc_pingpong ]]; then
  bad=$SV_TMP/damaged.pcap
  cp "${files[0]}" "$bad"
  off=$((24 + 16 + 66))
  printf "\\x$(printf '%02x' $((0xff ^ $(od -An -tu1 -j$off -N1 "$bad"))))" |
    dd of="$bad" bs=1 seek=$off conv=notrunc status=none
  if python3 "$(dirname "$0")/check.py" "$what" "$mtu" "$SV_SLOG" "$SV_CLOG" "$bad" >"$SV_TMP/damaged.log"; then
    sv_fail "check.py passed a capture with a damaged packet"
  fi
  grep -q 'wrong ICRC' "$SV_TMP/damaged.log" || sv_fail "check.py did not name the wrong ICRC"
fi
sv_log "pass: ${#files[@]} captures checked"
