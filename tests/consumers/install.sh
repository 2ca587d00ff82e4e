#!/usr/bin/env bash
# make install DESTDIR=tmp PREFIX=/usr; the installed softverbs run
# ibv_devinfo finds softverbs0; make uninstall leaves no file behind.
set -euo pipefail
bin=$1 src=$2
command -v ibv_devinfo >/dev/null || { echo "skip: ibv_devinfo missing (scripts/deps.sh run)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
timeout 600 make -s -C "$src" BUILD_DIR="$bin" install DESTDIR="$tmp" PREFIX=/usr >"$tmp.log" 2>&1 ||
  { cat "$tmp.log"; rm -f "$tmp.log"; exit 1; }
rm -f "$tmp.log"
[[ -x $tmp/usr/bin/softverbs && -e $tmp/usr/lib/softverbs/libibverbs.so.1 ]]
[[ ! -e $tmp/usr/lib/libibverbs.so.1 ]]
timeout 60 "$tmp/usr/bin/softverbs" run ibv_devinfo | grep -q 'hca_id:.*softverbs0'
# shellcheck disable=SC2016 # expanded by the program under softverbs run
timeout 60 "$tmp/usr/bin/softverbs" run sh -c 'echo "$LD_LIBRARY_PATH"' | grep -q "^$tmp/usr/lib/softverbs"
timeout 60 make -s -C "$src" BUILD_DIR="$bin" uninstall DESTDIR="$tmp" PREFIX=/usr
left=$(find "$tmp" -type f -o -type l)
[[ -z $left ]] || { echo "FAIL: left after uninstall: $left"; exit 1; }
echo "install: ok"
