#!/usr/bin/env bash
# rdma-core's own test suite, as Debian's python3-pyverbs ships it
# (/usr/share/doc/rdma-core/tests, partly gzipped), against BUILD_DIR's
# libraries on softverbs0.  Passes when no test fails; skips are counted per
# module (tests/pyverbs/run.py).  Exits 77 when python3-pyverbs is missing.
#
#   tests/pyverbs/run.sh BUILD_DIR [MODULE[.CLASS[.TEST]]...]
#
# Default: the generic modules (all but mlx5, efa, cuda).  Environment:
#   SOFTVERBS_TEST_TIMEOUT  seconds the suite may run (default 240)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${1:?usage: run.sh BUILD_DIR [MODULE...]}" && pwd)
shift
suite=/usr/share/doc/rdma-core/tests
# Debian's interpreter: pyverbs is built for it, not for a pyenv or venv one.
py=/usr/bin/python3

if [[ ! -x $py || ! -d $suite ]] || ! "$py" -c 'import pyverbs.device' 2>/dev/null; then
  echo "SKIP: python3-pyverbs is not installed (scripts/deps.sh consumers)"
  exit 77
fi

# shellcheck source=tests/run-env.sh
. "$here/../run-env.sh"
if ! sv_run_env "$build"; then
  echo "SKIP: the sanitizer runtime of $build was not found"
  exit 77
fi
# The rdma_cm tests fork python while a context it opened to check a
# capability (requires_mcast_support) still has our progress thread; the
# children start threads, which TSan refuses after a multi-threaded fork
# unless told otherwise.
if [[ $SV_RUN_SANITIZE == *thread* ]]; then
  for i in "${!SV_RUN_ENV[@]}"; do
    [[ ${SV_RUN_ENV[$i]} == TSAN_OPTIONS=* ]] && SV_RUN_ENV[i]+=" die_after_fork=0"
  done
fi

# The suite imports itself as the package "tests": a private copy, unzipped.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sv-pyverbs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cp -r "$suite" "$tmp/tests"
find "$tmp/tests" -name '*.gz' -exec gunzip -f {} +

cd "$tmp"
# Through `softverbs run`: the suite finds an IP for its rdma_cm tests by
# listing /sys/class/infiniband/<dev>/device/net, a fixed path.
# run.py prints what failed first; if the suite hangs, its log so far says
# which test it was in.
rc=0
timeout -k 10 "${SOFTVERBS_TEST_TIMEOUT:-240}" \
  env "${SV_RUN_ENV[@]}" SV_PYVERBS_LIVE="$tmp/live.log" \
  "$build/bin/softverbs" run -- "$py" "$here/run.py" "$tmp/tests" softverbs0 "$@" || rc=$?
if ((rc == 124 || rc == 137)); then
  echo "pyverbs: timed out after ${SOFTVERBS_TEST_TIMEOUT:-240} s, in:"
  tail -n 3 "$tmp/live.log" 2>/dev/null || true
fi
exit "$rc"
