#!/usr/bin/env bash
# Runs one of the fuzzers (receive path, stranger, CM messages) (tests/fuzz/CMakeLists.txt registers
# these as ctests):
#
#   tests/fuzz/run.sh FUZZ_DIR KIND MODE
#
# FUZZ_DIR: the clang sub-build (<build>/tests/fuzz/clang) holding fuzz_KIND
# and gen_corpus; KIND: stream, dgram, resp, stranger or cm; MODE:
#   smoke     20000 inputs or 20 s, whichever comes first, from the seeds only
#   extended  SOFTVERBS_FUZZ_SECONDS (default and minimum 60) seconds, only
#             when SOFTVERBS_TEST_EXTENDED=1 (else skipped); its corpus
#             persists in FUZZ_DIR/corpus-KIND, so extended runs build on
#             each other
# A crash, a sanitizer report or a broken invariant (memory outside the
# writable MR changed; for stranger anything changed; for cm an id in a
# state it must not be in) fails the test; the input that did it is kept in
# FUZZ_DIR/artifacts/ and the command to replay it is printed.
# Exit codes: 0 pass, 1 fail, 77 skip.
set -euo pipefail

log() { printf '[fuzz_%s_%s] %s\n' "${kind:-?}" "${mode:-?}" "$*"; }
skip() { log "SKIP: $*"; exit 77; }
fail() { log "FAIL: $*" >&2; exit 1; }

[[ $# -eq 3 ]] || { echo "usage: $0 FUZZ_DIR stream|dgram|resp|stranger|cm smoke|extended" >&2; exit 2; }
dir=$1 kind=$2 mode=$3
case $kind in stream|dgram|resp|stranger|cm) ;; *) fail "unknown kind '$kind'" ;; esac

case $mode in
  smoke)
    limits=(-runs=20000 -max_total_time=20) ;;
  extended)
    [[ ${SOFTVERBS_TEST_EXTENDED:-0} == 1 ]] ||
      skip "extended fuzzing runs only with SOFTVERBS_TEST_EXTENDED=1"
    secs=${SOFTVERBS_FUZZ_SECONDS:-60}
    ((secs >= 60)) || secs=60
    limits=(-max_total_time="$secs") ;;
  *) fail "unknown mode '$mode'" ;;
esac

fuzzer=$dir/fuzz_$kind
if [[ ! -x $fuzzer || ! -x $dir/gen_corpus ]]; then
  skip "${SOFTVERBS_FUZZ_WHY_NOT:-$fuzzer is not built}"
fi

case $kind in
  stream|resp|stranger) max_len=32768 ;;
  dgram) max_len=8192 ;;
  cm) max_len=4096 ;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/softverbs-fuzz-$kind.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$dir/gen_corpus" "$tmp/seeds-stream" "$tmp/seeds-dgram" "$tmp/seeds-resp" \
  "$tmp/seeds-stranger" "$tmp/seeds-cm"
seeds=$tmp/seeds-$kind
if [[ $mode == extended ]]; then
  corpus=$dir/corpus-$kind
else
  corpus=$tmp/corpus
fi
mkdir -p "$corpus" "$dir/artifacts"

args=("${limits[@]}" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048
      -print_final_stats=1 -artifact_prefix="$dir/artifacts/$kind-"
      "$corpus" "$seeds")
log "$fuzzer ${args[*]}"
rc=0
# Sanitizer reports abort (the harness is built with -fno-sanitize-recover).
ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  "$fuzzer" "${args[@]}" >"$tmp/out" 2>&1 || rc=$?
# libFuzzer's own progress lines are many: show the start, the end, and any report.
if ((rc != 0)); then
  cat "$tmp/out"
  art=$(grep -o "Test unit written to [^ ]*" "$tmp/out" | tail -n 1 | sed 's/.* to //' || true)
  [[ -z $art ]] || log "replay: $fuzzer $art"
  fail "$fuzzer exited with status $rc"
fi
grep -E '^INFO: (Seed|seed corpus|[0-9]+ files found)|^#[0-9]+[[:space:]]+INITED|^Done|^stat::' "$tmp/out" || true
tail -n 3 "$tmp/out" | grep -v '^stat::' || true
if grep -Eq 'ERROR: [A-Za-z]*Sanitizer|runtime error:|fuzz_(recv|cm): ' "$tmp/out"; then
  cat "$tmp/out"
  fail "a report in the output"
fi
# The checks themselves: a fuzzer that cannot fail proves nothing.  With
# SOFTVERBS_FUZZ_SELFTEST (fuzz_recv.c) the harness registers memory wrongly
# (or, for stranger, trusts the stranger) on purpose, and a seed must then
# trip the invariant or ASan.
selftest() {
  local n=$1 seed=$2 want=$3 src=0
  SOFTVERBS_FUZZ_SELFTEST=$n ASAN_OPTIONS=detect_leaks=0 \
    "$fuzzer" "$seeds/$seed" >"$tmp/selftest" 2>&1 || src=$?
  if ((src == 0)) || ! grep -q "$want" "$tmp/selftest"; then
    cat "$tmp/selftest"
    fail "self-test $n: seed $seed did not end in '$want' (status $src)"
  fi
  log "self-test $n: seed $seed is caught: $(grep -m1 -o "$want.*" "$tmp/selftest" | cut -c1-100)"
}
if [[ $kind == stream && $mode == smoke ]]; then
  selftest 1 write_readonly_mr 'memory outside the writable region changed'
  selftest 2 write_past_end 'use-after-poison'
fi
if [[ $kind == stranger && $mode == smoke ]]; then
  selftest 3 hello_write 'stranger changed'
fi
log "PASS"
