#!/usr/bin/env bash
# unit_stamp: the recorder writes what it stamped (tests/unit/stamp.c), and
# bench/stamps.py reads the steps back: spins of at least 2 us and 6 us
# (each step's median: a preempted spin moves it little).
set -u
bin=$1 tool=$2
command -v python3 >/dev/null || { echo "skip: no python3"; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
SOFTVERBS_STAMPS=$dir/st "$bin" || { echo "FAIL: $bin"; exit 1; }
files=("$dir"/st.*)
[[ ${#files[@]} == 1 && -s ${files[0]} ]] || { echo "FAIL: no stamp file in $dir"; exit 1; }
head -1 "${files[0]}" | grep -q '^# softverbs stamps: tsc thread point; ticks per ns [0-9.]*$' ||
  { echo "FAIL: header: $(head -1 "${files[0]}")"; exit 1; }
out=$(python3 "$tool" --path post_send post_send_done "${files[0]}") || { echo "FAIL: $tool"; exit 1; }
echo "$out"
step() {  # NAME LOW HIGH: the step's median in ns is within [LOW, HIGH]
  awk -v s="$1" -v lo="$2" -v hi="$3" '$1 == s { ok = $2 >= lo && $2 <= hi }
    END { exit !ok }' <<<"${out// -> /->}"
}
step 'post_send->ring_write' 1800 5000 || { echo "FAIL: post_send->ring_write is not ~2000 ns"; exit 1; }
step 'ring_write->ring_written' 5400 12000 || { echo "FAIL: ring_write->ring_written is not ~6000 ns"; exit 1; }
grep -q '2000 of 2000 this way' <<<"$out" || { echo "FAIL: not every run the same way"; exit 1; }
# a file against itself: the same steps, none changed
cmp=$(python3 "$tool" --path post_send post_send_done --via ring_write --a "${files[0]}" --b "${files[0]}") ||
  { echo "FAIL: $tool --a --b"; exit 1; }
echo "$cmp"
awk '$1 == "ring_write" && $2 == "->" { n++; if ($6 != "+0") bad = 1 }
     $1 == "sum" && $4 == "+0" { sum = 1 }
     END { exit !(n == 1 && !bad && sum) }' <<<"$cmp" || { echo "FAIL: compare of a file with itself"; exit 1; }
echo "PASS"
