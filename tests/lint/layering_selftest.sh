#!/usr/bin/env bash
# tests/lint/layering_selftest.sh [ROOT]: tools/layering.sh passes on ROOT's
# src/ (default: this tree), and on a copy of it fails on a new violation
# (naming each one) and on a known one that went away.  No build, no root.
set -euo pipefail
export LC_ALL=C

root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
out=$tmp/out

ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; failed=1; }

# fresh: a copy of src/ and tools/ in $tmp/t.
fresh() {
  rm -rf "$tmp/t"
  mkdir "$tmp/t"
  cp -r "$root/src" "$root/tools" "$tmp/t/"
}

# check WANT_RC: run the copy's tools/layering.sh, its output in $out.
check() {
  local rc=0
  bash "$tmp/t/tools/layering.sh" "$tmp/t" >"$out" 2>&1 || rc=$?
  if ((rc != $1)); then
    fail "tools/layering.sh exited $rc, not $1:"
    sed 's/^/  /' "$out"
    return 1
  fi
}

# expect TEXT: the last run printed a line containing TEXT.
expect() {
  if grep -qF -- "$1" "$out"; then ok "names: $1"; else fail "does not name: $1"; sed 's/^/  /' "$out"; fi
}

# add_include LAYER HEADER: append `#include "HEADER"` to the first .c file
# of the copy's LAYER that does not include it yet; prints "file:line".
add_include() {
  local f
  for f in $(cd "$tmp/t" && find "src/$1" -name '*.c' | sort); do
    grep -qF "#include \"$2\"" "$tmp/t/$f" && continue
    echo "#include \"$2\"" >>"$tmp/t/$f"
    echo "$f:$(wc -l <"$tmp/t/$f")"
    return 0
  done
  echo "no .c file under src/$1 to add an include to" >&2
  return 1
}

# 1. The tree as it is.
fresh
if check 0; then
  ok "passes on the tree: $(tail -n 1 "$out")"
  expect ", 0 new"
fi

# 2. Three new violations: all fail and all are named.  verbs sees the
# engine only through engine/api.h, never engine.h (which shows transports).
fresh
t_at=$(add_include transport verbs/sv.h)
e_at=$(add_include engine transport/shm/ring.h)
v_at=$(add_include verbs engine/engine.h)
if check 1; then
  ok "fails on new violations"
  expect "$t_at: transport must not include verbs/sv.h (rule: transport ->"
  expect "$e_at: engine must not include transport/shm/ring.h (rule: engine ->"
  expect "$v_at: verbs must not include engine/engine.h (rule: verbs ->"
  expect ", 3 new"
fi

# 3. A violation listed in tools/layering.known passes; once its include is
# removed, the entry fails as fixed.  The first entry of the real list, or
# one made here when the list is empty.
fresh
known=$tmp/t/tools/layering.known
entry=$(grep -v '^#' "$known" | grep -m1 . || true)
if [[ -z $entry ]]; then
  at=$(add_include engine transport/shm/ring.h)
  entry="${at%:*}: transport/shm/ring.h"
  { cat "$known"; echo "$entry"; } >"$tmp/known" && mv "$tmp/known" "$known"
  check 0 && ok "a listed violation passes"
fi
file=${entry%%: *} header=${entry#*: }
grep -vF "#include \"$header\"" "$tmp/t/$file" >"$tmp/edited" || true
cp "$tmp/edited" "$tmp/t/$file"
if check 1; then
  ok "fails when a listed violation is gone"
  expect "fixed: $entry no longer occurs: remove it from tools/layering.known"
  expect "1 fixed"
fi

if ((failed)); then
  echo "layering_selftest: FAILED"
  exit 1
fi
echo "layering_selftest: passed"
