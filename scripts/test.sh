#!/usr/bin/env bash
# Builds and runs the test suite in one or more configurations:
#
#   scripts/test.sh [SUITE...]     SUITE: plain (build/), asan (build-asan/,
#                                  SANITIZE=address,undefined), tsan (build-tsan/,
#                                  SANITIZE=thread); default: plain asan tsan
#
# Each suite is configured, built and run with ctest (--output-on-failure,
# a default per-test timeout, -j JOBS).  A suite that fails does not stop the
# next one; the exit status is non-zero if any failed.  The last line is the
# total, "N passed, N failed, N skipped", also written to the file named by
# $SOFTVERBS_TEST_SUMMARY if set.
#
# Knobs (environment): JOBS (default 2), CTEST_TIMEOUT (default 300 s per
# test without its own TIMEOUT), CTEST_ARGS (extra ctest arguments, e.g.
# "-R compat"), SOFTVERBS_TEST_TSAN=0 (leave out the TSan suite),
# SOFTVERBS_TEST_BUDGET (seconds; default 1500: the TSan suite is left out
# when the suites before it took longer than that, to keep `make test` near
# half an hour on CI's two cores).
set -euo pipefail

cd "$(dirname "$0")/.."
JOBS=${JOBS:-2}
CTEST_TIMEOUT=${CTEST_TIMEOUT:-300}
BUDGET=${SOFTVERBS_TEST_BUDGET:-1500}
read -r -a extra_ctest_args <<<"${CTEST_ARGS:-}"

[[ $# -gt 0 ]] || set -- plain asan tsan

total_pass=0 total_fail=0 total_skip=0
summary=()
status=0
start=$SECONDS

# run_suite NAME DIR SANITIZE
run_suite() {
  local name=$1 dir=$2 sanitize=$3 junit t0=$SECONDS rc=0 pass fail skip
  local runner=()
  echo
  echo "=== suite $name: $dir${sanitize:+ (SANITIZE=$sanitize)}"
  if ! cmake -S . -B "$dir" -DSANITIZE="$sanitize"; then
    echo "=== suite $name: CMake configure FAILED"
    summary+=("$name: configure failed")
    total_fail=$((total_fail + 1)); status=1
    return 0
  fi
  if ! cmake --build "$dir" -j "$JOBS"; then
    echo "=== suite $name: build FAILED"
    summary+=("$name: build failed")
    total_fail=$((total_fail + 1)); status=1
    return 0
  fi

  # gcc 12's TSan cannot map its shadow memory with the high mmap
  # randomization of recent kernels: run that suite with ASLR off.
  if [[ $sanitize == thread ]] &&
     (($(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 0) > 28)) &&
     setarch "$(uname -m)" -R true 2>/dev/null; then
    runner=(setarch "$(uname -m)" -R)
  fi

  # Suppressions (tests/tsan.supp; races in application buffers, which are the
  # application's, the engine hides from TSan itself: src/util/tsan.h).
  local -x TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS }suppressions=$PWD/tests/tsan.supp"

  junit=$(mktemp "${TMPDIR:-/tmp}/softverbs-junit.XXXXXX")
  "${runner[@]}" ctest --test-dir "$dir" --output-on-failure --timeout "$CTEST_TIMEOUT" \
      -j "$JOBS" --output-junit "$junit" "${extra_ctest_args[@]}" </dev/null || rc=$?
  # ctest's JUnit status per test: run, fail, notrun (skipped), disabled.
  pass=$(grep -c '<testcase .*status="run"' "$junit" || true)
  fail=$(grep -c '<testcase .*status="fail"' "$junit" || true)
  skip=$(grep -Ec '<testcase .*status="(notrun|disabled)"' "$junit" || true)
  rm -f "$junit"
  if ((rc != 0 && fail == 0)); then
    fail=1   # ctest itself failed (e.g. could not run a test at all)
  fi
  total_pass=$((total_pass + pass))
  total_fail=$((total_fail + fail))
  total_skip=$((total_skip + skip))
  ((rc == 0)) || status=1
  summary+=("$name: $pass passed, $fail failed, $skip skipped ($((SECONDS - t0))s)")
  echo "=== suite $name: $pass passed, $fail failed, $skip skipped in $((SECONDS - t0))s"
}

for suite in "$@"; do
  case $suite in
    plain) run_suite plain build "" ;;
    asan) run_suite asan build-asan address,undefined ;;
    tsan)
      if [[ ${SOFTVERBS_TEST_TSAN:-1} == 0 ]]; then
        summary+=("tsan: left out (SOFTVERBS_TEST_TSAN=0)")
      elif (($# > 1 && SECONDS - start > BUDGET)); then
        summary+=("tsan: left out (suites before it took $((SECONDS - start))s > ${BUDGET}s; run make test-tsan)")
      else
        run_suite tsan build-tsan thread
      fi ;;
    *) echo "test.sh: unknown suite '$suite' (plain, asan, tsan)" >&2; exit 2 ;;
  esac
done

echo
echo "=== test summary ($((SECONDS - start))s)"
for line in "${summary[@]}"; do
  echo "  $line"
done
line="$total_pass passed, $total_fail failed, $total_skip skipped"
if [[ -n ${SOFTVERBS_TEST_SUMMARY:-} ]]; then
  echo "$line" >"$SOFTVERBS_TEST_SUMMARY"
fi
echo "tests: $line"
exit "$status"
