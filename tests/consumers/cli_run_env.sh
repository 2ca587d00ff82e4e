#!/usr/bin/env bash
# A program under softverbs run sees our lib first in LD_LIBRARY_PATH, the
# device node as a character device and the sysfs tree; nothing stays behind.
set -euo pipefail
bin=$1
[[ $(id -u) -eq 0 ]] || { echo "skip: needs root (a private mount namespace)"; exit 77; }
before=$(ls -d /dev/infiniband 2>/dev/null || true)
timeout 60 "$bin/bin/softverbs" run "$bin/bin/consumers_run_probe" "$(cd "$bin/lib" && pwd)"
after=$(ls -d /dev/infiniband 2>/dev/null || true)
[[ $before == "$after" ]] || { echo "FAIL: /dev/infiniband changed outside the run"; exit 1; }
