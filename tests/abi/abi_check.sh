#!/bin/bash
# abi_check.sh BUILD_DIR
#
# Compares the exported ABI of BUILD_DIR/lib/libibverbs.so.1 (and
# BUILD_DIR/lib/librdmacm.so.1, once it exists) with the system libraries
# the project replaces (rdma-core 44 on Debian 12):
#
#   - version definitions: every node, its parent(s), its flags;
#   - dynamic symbols: name, version, default (@@) or not (@), kind
#     (function / data object / version node), and a data object's size
#     (copy relocations bake the size into executables).
#
# Missing and extra symbols are listed; any difference fails.  Differences
# in binding (GLOBAL vs WEAK) are only reported.
#
# Environment: SYSTEM_LIBDIR overrides where the reference libraries are
# (default: the directory of the system's libibverbs.so.1).
#
# Exit status: 0 identical, 1 different or our library missing, 77 skip
# (no reference library, or no readelf).
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
BUILD=$1
OURS=$BUILD/lib

log() { printf '[abi_check] %s\n' "$*"; }

command -v readelf >/dev/null || { log "SKIP: readelf (binutils) is not installed"; exit 77; }

SYS=${SYSTEM_LIBDIR:-}
if [[ -z $SYS ]]; then
  for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /lib/x86_64-linux-gnu; do
    if [[ -e $d/libibverbs.so.1 ]]; then SYS=$d; break; fi
  done
fi
if [[ -z $SYS || ! -e $SYS/libibverbs.so.1 ]]; then
  log "SKIP: no system libibverbs.so.1 to compare with (install libibverbs1)"
  exit 77
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/abi_check.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# Exported symbols of $1, one per line:
#   NAME VERSION DEFAULT|COMPAT|UNVERSIONED KIND[:SIZE] BIND
# KIND is func (FUNC, IFUNC), object (OBJECT, with its size), version (the
# absolute OBJECT the linker emits for each version node), or the raw type.
# Sanitizer runtime symbols that instrumented builds may export are dropped.
symbols() {
  readelf --dyn-syms --wide "$1" | awk '
    $1 ~ /^[0-9]+:$/ && NF >= 8 && $7 != "UND" && $5 != "LOCAL" {
      name = $8
      if (index(name, "@@")) { split(name, p, "@@"); kind = "DEFAULT" }
      else if (index(name, "@")) { split(name, p, "@"); kind = "COMPAT" }
      else { p[1] = name; p[2] = "-"; kind = "UNVERSIONED" }
      if (p[1] ~ /^(__asan|__odr_asan|__tsan|__ubsan|__sanitizer|__lsan)/) next
      type = $4
      if (type == "FUNC" || type == "IFUNC") t = "func"
      else if (type == "OBJECT" && $7 == "ABS" && p[1] == p[2]) t = "version"
      else if (type == "OBJECT") t = "object:" $3
      else t = tolower(type)
      print p[1], p[2], kind, t, $5
    }' | sort -u
}

# Version definitions of $1, one per line: "NODE flags=FLAGS parents=P1,P2".
# The base entry (the soname) is printed as "BASE name=SONAME".
versions() {
  readelf --version-info --wide "$1" | awk '
    /^Version definition section/ { in_def = 1; next }
    /^Version (needs|symbols) section/ { in_def = 0 }
    !in_def { next }
    /Rev:/ {
      flush()
      name = $0; sub(/.*Name: /, "", name)
      flags = $0; sub(/.*Flags: /, "", flags); sub(/ +Index:.*/, "", flags)
      parents = ""
      base = (flags ~ /BASE/)
      next
    }
    /Parent [0-9]+:/ { p = $0; sub(/.*Parent [0-9]+: /, "", p); parents = parents (parents == "" ? "" : ",") p }
    function flush() {
      if (name == "") return
      if (base) print "BASE name=" name
      else print name, "flags=" flags, "parents=" (parents == "" ? "-" : parents)
      name = ""
    }
    END { flush() }' | sort
}

# compare LIBNAME: returns 0 when identical.
compare() {
  local lib=$1 ref=$SYS/$1 our=$OURS/$1 rc=0
  log "comparing $our"
  log "     with $ref"

  versions "$ref" >"$TMP/$lib.ref.ver"
  versions "$our" >"$TMP/$lib.our.ver"
  if ! cmp -s "$TMP/$lib.ref.ver" "$TMP/$lib.our.ver"; then
    log "FAIL: version definitions differ (- system, + ours):"
    diff -U0 "$TMP/$lib.ref.ver" "$TMP/$lib.our.ver" | sed -n 's/^\([-+][^-+]\)/    \1/p' || true
    rc=1
  fi

  symbols "$ref" >"$TMP/$lib.ref.sym"
  symbols "$our" >"$TMP/$lib.our.sym"

  # Keys: NAME VERSION DEFAULT|COMPAT (what a binary binds to).
  awk '{print $1, $2, $3}' "$TMP/$lib.ref.sym" | sort -u >"$TMP/$lib.ref.key"
  awk '{print $1, $2, $3}' "$TMP/$lib.our.sym" | sort -u >"$TMP/$lib.our.key"
  local missing extra
  missing=$(comm -23 "$TMP/$lib.ref.key" "$TMP/$lib.our.key")
  extra=$(comm -13 "$TMP/$lib.ref.key" "$TMP/$lib.our.key")
  fmt() { awk '{ sep = ($3 == "DEFAULT") ? "@@" : ($3 == "COMPAT" ? "@" : ""); v = ($2 == "-") ? "" : $2; print "    " $1 sep v }'; }
  if [[ -n $missing ]]; then
    log "FAIL: $(wc -l <<<"$missing") symbol(s) of the system $lib missing from ours:"
    fmt <<<"$missing"
    rc=1
  fi
  if [[ -n $extra ]]; then
    log "FAIL: $(wc -l <<<"$extra") symbol(s) exported by ours but not by the system $lib:"
    fmt <<<"$extra"
    rc=1
  fi

  # Same key, different kind (function vs data, object size).
  local kinds
  kinds=$(join -j1 \
            <(awk '{print $1 "@" $2 "@" $3, $4}' "$TMP/$lib.ref.sym" | sort) \
            <(awk '{print $1 "@" $2 "@" $3, $4}' "$TMP/$lib.our.sym" | sort) |
          awk '$2 != $3 { split($1, k, "@"); printf "    %s%s%s: system %s, ours %s\n", k[1], (k[3] == "DEFAULT" ? "@@" : "@"), k[2], $2, $3 }')
  if [[ -n $kinds ]]; then
    log "FAIL: symbol kinds differ:"
    printf '%s\n' "$kinds"
    rc=1
  fi

  local binds
  binds=$(join -j1 \
            <(awk '{print $1 "@" $2 "@" $3, $5}' "$TMP/$lib.ref.sym" | sort) \
            <(awk '{print $1 "@" $2 "@" $3, $5}' "$TMP/$lib.our.sym" | sort) |
          awk '$2 != $3 { split($1, k, "@"); printf "    %s%s%s: system %s, ours %s\n", k[1], (k[3] == "DEFAULT" ? "@@" : "@"), k[2], $2, $3 }')
  if [[ -n $binds ]]; then
    log "note: symbol bindings differ (not an ABI break for dynamic linking):"
    printf '%s\n' "$binds"
  fi

  if [[ $rc -eq 0 ]]; then
    log "OK: $lib: $(wc -l <"$TMP/$lib.ref.ver") version definitions and $(wc -l <"$TMP/$lib.ref.key") exported symbols match"
  fi
  return $rc
}

status=0
if [[ ! -e $OURS/libibverbs.so.1 ]]; then
  log "FAIL: $OURS/libibverbs.so.1 does not exist (build the project first)"
  status=1
else
  compare libibverbs.so.1 || status=1
fi

if [[ ! -e $SYS/librdmacm.so.1 ]]; then
  log "librdmacm.so.1: no system library to compare with; skipping that half"
elif [[ ! -e $OURS/librdmacm.so.1 ]]; then
  log "librdmacm.so.1: not built yet ($OURS/librdmacm.so.1 missing); skipping that half"
else
  compare librdmacm.so.1 || status=1
fi

exit $status
