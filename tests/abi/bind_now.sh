#!/bin/bash
# bind_now.sh BUILD_DIR PROGRAM
# bind_now.sh BUILD_DIR providers DLOPEN_CHECK
#
# Makes the dynamic loader bind every symbol that Debian's unmodified RDMA
# programs (and the libraries they link or load) need, against this build's
# lib/, without needing an RDMA device or a network, and fails if anything
# is unresolved:
#
# PROGRAM (ibv_devinfo, ibv_rc_pingpong, ib_send_bw, rping, fi_info):
#   1. trace: LD_TRACE_LOADED_OBJECTS=1 LD_BIND_NOW=1 LD_WARN=1 (what
#      `ldd -r` does): the loader maps the program and all its libraries,
#      resolves every relocation, reports each failure, and exits before
#      main.  Also checks that libibverbs.so.1 (and librdmacm.so.1, once
#      built) resolved to BUILD_DIR/lib, not to the system's copies.
#   2. run: PROGRAM with a help option under LD_BIND_NOW=1, so it starts
#      for real (constructors of every library run, e.g. the providers'
#      verbs_register_driver_34 calls) and exits from its option parser.
#      LD_DEBUG=libs confirms that our libibverbs.so.1 was the one
#      initialised.  For fi_info, `fi_info -l` is run as well: it loads and
#      initialises every libfabric provider (verbs, efa, psm, ...), which
#      is where libfabric dlopens its provider plugins (lib*-fi.so; the
#      Debian 12 package builds them all in, so it finds none) and where the
#      verbs/efa providers call into libibverbs and librdmacm.
#
# providers: every rdma-core provider plugin (.../libibverbs/*.so) and the
#   provider libraries programs link directly (libmlx5.so.1, libefa.so.1,
#   ...): traced as above, then really dlopen()ed with RTLD_NOW by
#   DLOPEN_CHECK (tests/abi/dlopen_check.c), which runs their constructors
#   and reports which libibverbs.so.1 they bound to.
#
# Any "symbol lookup error", "undefined symbol", "version `...' not found",
# missing library or "not defined in file ... with link time reference"
# fails the test, as does a crash or a timeout.  When BUILD_DIR is a
# sanitized build, the sanitizer runtime is preloaded.
#
# Environment: BIND_NOW_TIMEOUT (seconds per program run, default 60).
# Exit status: 0 pass, 1 fail, 77 skip (the program is not installed).
set -euo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 BUILD_DIR PROGRAM | $0 BUILD_DIR providers DLOPEN_CHECK" >&2
  exit 2
fi
BUILD=$1
TARGET=$2
DLOPEN_CHECK=${3:-}
LIB=$(cd "$BUILD/lib" 2>/dev/null && pwd -P) || LIB=$BUILD/lib
TIMEOUT=${BIND_NOW_TIMEOUT:-60}
NAME="bind_now $TARGET"

log() { printf '[%s] %s\n' "$NAME" "$*"; }
fail() { printf '[%s] FAIL: %s\n' "$NAME" "$*" >&2; exit 1; }
skip() { printf '[%s] SKIP: %s\n' "$NAME" "$*"; exit 77; }

[[ -e $LIB/libibverbs.so.1 ]] || fail "$LIB/libibverbs.so.1 does not exist (build the project first)"
OUR_VERBS=$(readlink -f "$LIB/libibverbs.so.1")
OUR_CM=
[[ -e $LIB/librdmacm.so.1 ]] && OUR_CM=$(readlink -f "$LIB/librdmacm.so.1")

TMP=$(mktemp -d "${TMPDIR:-/tmp}/bind_now.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# --- environment of the programs under test --------------------------------

ENVV=("LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "LD_BIND_NOW=1")

sanitize=${SOFTVERBS_SANITIZE-}
if [[ -z $sanitize && -r $BUILD/CMakeCache.txt ]]; then
  sanitize=$(sed -n 's/^SANITIZE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
fi
runtime_of() {  # path of sanitizer runtime $1 (libasan.so, libtsan.so)
  local cc=gcc p
  if [[ -r $BUILD/CMakeCache.txt ]]; then
    cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
    cc=${cc:-gcc}
  fi
  p=$("$cc" -print-file-name="$1" 2>/dev/null || true)
  [[ $p == /* && -e $p ]] || fail "cannot find the $1 runtime for the $sanitize build"
  readlink -f "$p"
}
preload=
if [[ $sanitize == *address* ]]; then
  preload=$(runtime_of libasan.so)
  ENVV+=("ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0")
elif [[ $sanitize == *thread* ]]; then
  preload=$(runtime_of libtsan.so)
fi
[[ -n $preload ]] && ENVV+=("LD_PRELOAD=$preload${LD_PRELOAD:+:$LD_PRELOAD}")

# --- checks -----------------------------------------------------------------

# Loader complaints in file $1 (printed); returns 0 when there are none.
ERRORS='symbol lookup error|undefined symbol|version `[^'"'"']*'"'"' not found|=> not found|not defined in file|error while loading shared libraries|cannot open shared object file'
no_loader_errors() {
  if grep -Eq "$ERRORS" "$1"; then
    log "loader errors in $2:"
    grep -E "$ERRORS" "$1" | sort -u | sed 's/^/    /' | head -200
    return 1
  fi
  return 0
}

# Trace output $1: SONAME => PATH must be our PATH ($3) when present.
resolved_to_ours() {
  local file=$1 soname=$2 want=$3 got
  got=$(awk -v s="$soname" '$1 == s && $2 == "=>" { print $3; exit }' "$file")
  [[ -z $got ]] && return 0                   # not needed by this object
  got=$(readlink -f "$got" 2>/dev/null || echo "$got")
  if [[ $got != "$want" ]]; then
    log "$soname resolved to $got, not to $want"
    return 1
  fi
  log "$soname => $got"
}

# The loader (PT_INTERP) of ELF file $1, for tracing shared objects.
interp_of() {
  readelf -l "$1" 2>/dev/null | sed -n 's/.*Requesting program interpreter: \(.*\)\]/\1/p' | head -1
}

# trace FILE LABEL: loader trace of an executable or (through the loader) a
# shared object; returns 0 if everything resolved from our lib/.
trace() {
  local file=$1 label=$2 out=$TMP/trace.$RANDOM ok=0 cmd
  if [[ $file == *.so* ]]; then
    local ld
    ld=$(interp_of /bin/sh)
    [[ -n $ld ]] || fail "cannot find the dynamic loader"
    cmd=("$ld" "$file")
  else
    cmd=("$file")
  fi
  env "${ENVV[@]}" LD_TRACE_LOADED_OBJECTS=1 LD_WARN=1 "${cmd[@]}" >"$out" 2>&1 || true
  no_loader_errors "$out" "trace of $label" || ok=1
  resolved_to_ours "$out" libibverbs.so.1 "$OUR_VERBS" || ok=1
  if [[ -n $OUR_CM ]]; then
    resolved_to_ours "$out" librdmacm.so.1 "$OUR_CM" || ok=1
  fi
  if ! grep -q '=>' "$out"; then
    log "trace of $label printed no libraries:"
    sed 's/^/    /' "$out" | head -20
    ok=1
  fi
  return $ok
}

# run LABEL PROGRAM ARGS...: start the program for real under LD_BIND_NOW.
run() {
  local label=$1 out=$TMP/run.$RANDOM dbg=$TMP/lddebug.$RANDOM rc=0 ok=0
  shift
  log "running: $*"
  env "${ENVV[@]}" LD_DEBUG=libs LD_DEBUG_OUTPUT="$dbg" \
    timeout -k 5 "$TIMEOUT" "$@" >"$out" 2>&1 </dev/null || rc=$?
  no_loader_errors "$out" "$label" || ok=1
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    log "$label timed out after ${TIMEOUT}s"; ok=1
  elif [[ $rc -eq 127 ]]; then
    log "$label could not start (exit 127)"; ok=1
  elif [[ $rc -gt 128 && $rc -le 192 ]]; then
    log "$label died from signal $((rc - 128))"; ok=1
  fi
  if grep -Eq 'ERROR: [A-Za-z]*Sanitizer|WARNING: ThreadSanitizer|runtime error:' "$out"; then
    log "sanitizer report from $label"; ok=1
  fi
  # The loader's own log says which libibverbs.so.1 it initialised.
  local inits=() f verbs_ok=0
  mapfile -t inits < <(cat "$dbg".* 2>/dev/null | sed -n 's/.*calling init: //p' | sort -u)
  for f in "${inits[@]}"; do
    [[ $(readlink -f "$f" 2>/dev/null) == "$OUR_VERBS" ]] && verbs_ok=1
    if [[ $(basename "$f") == libibverbs.so* || ( -n $OUR_CM && $(basename "$f") == librdmacm.so* ) ]]; then
      case $(readlink -f "$f" 2>/dev/null) in
        "$OUR_VERBS" | "$OUR_CM") ;;
        *) log "$label initialised $f, not ours"; ok=1 ;;
      esac
    fi
  done
  if [[ $verbs_ok -eq 0 ]]; then
    log "$label did not initialise $OUR_VERBS (LD_DEBUG saw: ${inits[*]:-nothing})"
    ok=1
  fi
  if [[ $ok -ne 0 ]]; then
    log "output of $label (exit $rc):"
    sed 's/^/    /' "$out" | head -60
  else
    log "$label ok (exit $rc, $(wc -l <"$out") lines of output)"
  fi
  return $ok
}

status=0
case $TARGET in
  providers)
    [[ -n $DLOPEN_CHECK && -x $DLOPEN_CHECK ]] || fail "providers needs the dlopen_check program"
    declare -A seen=()
    libs=()
    for f in /usr/lib/x86_64-linux-gnu/libibverbs/*.so /usr/lib64/libibverbs/*.so \
             /usr/lib/x86_64-linux-gnu/lib{mlx5,mlx4,efa,mana,hns}.so.1 \
             /usr/lib/x86_64-linux-gnu/libfabric.so.1; do
      [[ -e $f ]] || continue
      real=$(readlink -f "$f")
      [[ -n ${seen[$real]:-} ]] && continue
      seen[$real]=1
      libs+=("$f")
    done
    [[ ${#libs[@]} -gt 0 ]] || skip "no rdma-core provider libraries are installed"
    log "tracing ${#libs[@]} provider libraries"
    for f in "${libs[@]}"; do
      trace "$f" "$(basename "$f")" >"$TMP/one" 2>&1 || { cat "$TMP/one"; status=1; }
    done
    log "dlopen(RTLD_NOW) of each, in one process"
    out=$TMP/dlopen
    rc=0
    env "${ENVV[@]}" timeout -k 5 "$TIMEOUT" "$DLOPEN_CHECK" "${libs[@]}" >"$out" 2>&1 || rc=$?
    sed 's/^/    /' "$out"
    if [[ ${rc:-0} -ne 0 ]]; then log "dlopen_check exited ${rc}"; status=1; fi
    no_loader_errors "$out" "dlopen_check" || status=1
    got=$(sed -n 's/^loaded libibverbs.so.1 => //p' "$out")
    got=$(readlink -f "$got" 2>/dev/null || echo "$got")
    if [[ $got != "$OUR_VERBS" ]]; then
      log "the providers bound to libibverbs.so.1 at '$got', not $OUR_VERBS"; status=1
    fi
    ;;
  *)
    prog=$(command -v "$TARGET" 2>/dev/null) || skip "$TARGET is not installed"
    log "tracing $prog"
    trace "$prog" "$TARGET" || status=1
    case $TARGET in
      ibv_devinfo | ibv_rc_pingpong) run "$TARGET -h" "$prog" -h || status=1 ;;
      ib_send_bw | fi_info) run "$TARGET --help" "$prog" --help || status=1 ;;
      rping) run "$TARGET -h" "$prog" -h || status=1 ;;
      *) run "$TARGET --help" "$prog" --help || status=1 ;;
    esac
    if [[ $TARGET == fi_info ]]; then
      # Loads and initialises every provider (no device or network needed:
      # those without hardware just report nothing).
      run "fi_info -l" "$prog" -l || status=1
    fi
    ;;
esac

if [[ $status -eq 0 ]]; then
  log "PASS"
else
  log "FAIL"
fi
exit $status
