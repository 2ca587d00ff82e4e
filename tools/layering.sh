#!/usr/bin/env bash
# tools/layering.sh [-v] [ROOT]: check that the layers of src/ include only
# what RULES below allows.  A layer is a directory under src/; every
# `#include "..."` of src/**/*.c and src/**/*.h (and every `#include <...>`
# that names a file under src/) is checked against its file's layer.
#
# tools/layering.known lists the violations that exist today, one
# `file: header` a line, sorted.  Such a violation is only counted; any
# other one fails, and so does an entry of the list that no longer occurs:
# the list can only shrink.  Exit 0 when clean, 1 on a violation, 2 on a
# usage error.  -v also prints each known violation.  ROOT is the tree to
# check (default: the one this script is in).
set -euo pipefail
export LC_ALL=C

# What each layer may include: other layers (any header under src/<layer>/)
# or single headers.  A layer always names itself: nothing is implicit.
# cm and cli are other binaries, linked to libibverbs only through its
# exported API, so they may take only the header-only pieces of util;
# the CLI also reads status/format.h, the layout of what processes publish.
RULES='
cli       -> cli, status/format.h, util/list.h, util/time.h, util/tsan.h
cm        -> cm, util/list.h, util/time.h, util/tsan.h, util/sys.h
rs        -> rs, util/time.h
engine    -> engine, status, transport/transport.h, verbs/sv.h, wire, util
status    -> status, util
transport -> transport, wire, util
util      -> util
verbs     -> verbs, engine/api.h, status, wire, util
wire      -> wire, util
'

usage() {
  echo "usage: $0 [-v] [ROOT]" >&2
  exit 2
}

verbose=0
root=
while (($#)); do
  case $1 in
    -v) verbose=1 ;;
    -h | --help) usage ;;
    -*) usage ;;
    *) [[ -z $root ]] || usage; root=$1 ;;
  esac
  shift
done
[[ -n $root ]] || root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
[[ -d src ]] || { echo "layering: $root has no src/" >&2; exit 2; }
known_file=tools/layering.known

declare -A allow=() rule=()
while read -r layer arrow list; do
  [[ -n $layer ]] || continue
  [[ $arrow == '->' && -n $list ]] || { echo "layering: bad rule: $layer $arrow $list" >&2; exit 2; }
  allow[$layer]=${list//,/ }
  rule[$layer]="$layer -> $list"
done <<<"$RULES"

# allowed LAYER HEADER: is HEADER (a path under src/) in LAYER's rule?
allowed() {
  local entry
  for entry in ${allow[$1]}; do
    if [[ $entry == *.h ]]; then
      [[ $2 == "$entry" ]] && return 0
    else
      [[ $2 == "$entry"/* ]] && return 0
    fi
  done
  return 1
}

# The baseline: "file: header" -> its line in tools/layering.known.
declare -A known=()
n=0 prev=
if [[ -f $known_file ]]; then
  while IFS= read -r line || [[ -n $line ]]; do
    n=$((n + 1))
    [[ -z $line || $line == '#'* ]] && continue
    if [[ ! $line =~ ^src/[^:[:space:]]+:\ [^[:space:]]+$ ]]; then
      echo "$known_file:$n: not a 'file: header' line: $line" >&2; exit 2
    fi
    if [[ -n $prev && ! $prev < $line ]]; then
      echo "$known_file:$n: not sorted (LC_ALL=C sort -u) after '$prev'" >&2; exit 2
    fi
    prev=$line
    known[$line]=$n
  done <"$known_file"
fi

mapfile -t files < <(find src -type f \( -name '*.c' -o -name '*.h' \) | sort)
include_re='^([^:]+):([0-9]+):[[:space:]]*#[[:space:]]*include[[:space:]]*([<"])([^>"]+)[>"]'

declare -A seen=()
new=0 left=0
while IFS= read -r hit; do
  [[ $hit =~ $include_re ]] || continue
  file=${BASH_REMATCH[1]} ln=${BASH_REMATCH[2]} delim=${BASH_REMATCH[3]} name=${BASH_REMATCH[4]}
  rel=${file#src/}
  layer=${rel%%/*}
  # Where the header is, as a path under src/ (the build's -I src, then the
  # including file's directory for a quoted name).
  if [[ -f src/$name ]]; then
    header=$name
  elif [[ $delim == '"' && -f ${file%/*}/$name ]]; then
    header=${file%/*}/$name
    header=${header#src/}
  elif [[ $delim == '"' ]]; then
    echo "$file:$ln: \"$name\" is not a file under src/"
    new=$((new + 1)); continue
  else
    continue  # a system header
  fi
  if [[ $layer == "$rel" ]]; then
    echo "$file:$ln: $file is in no layer (a directory under src/)"
    new=$((new + 1)); continue
  elif [[ -z ${allow[$layer]+x} ]]; then
    echo "$file:$ln: layer $layer has no rule (add one to RULES in tools/layering.sh)"
    new=$((new + 1)); continue
  fi
  [[ $header != *./* ]] || header=$(realpath -m --relative-to=src "src/$header")
  allowed "$layer" "$header" && continue
  key="$file: $header"
  msg="$layer must not include $header (rule: ${rule[$layer]})"
  if [[ -n ${known[$key]+x} ]]; then
    if [[ -z ${seen[$key]+x} ]]; then left=$((left + 1)); fi
    seen[$key]=1
    ((verbose)) && echo "$file:$ln: known: $msg"
  else
    echo "$file:$ln: $msg"
    new=$((new + 1))
  fi
done < <(grep -nHE '^[[:space:]]*#[[:space:]]*include' -- "${files[@]}" || true)

for key in "${!known[@]}"; do
  [[ -n ${seen[$key]+x} ]] && continue
  printf '%s:%s: fixed: %s no longer occurs: remove it from %s\n' \
    "$known_file" "${known[$key]}" "$key" "$known_file"
done | sort -t: -k2,2n
fixed=$((${#known[@]} - left))

summary="layering: $left known violations left, $new new"
((fixed == 0)) || summary+=", $fixed fixed (remove them from $known_file)"
echo "$summary"
((new == 0 && fixed == 0))
