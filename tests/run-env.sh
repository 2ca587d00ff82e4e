# shellcheck shell=bash
# The environment a Debian program under test runs with, for a build
# directory: our lib/ first in the library path and, when the build is
# sanitized, the sanitizer runtime preloaded first (Debian's programs are not
# instrumented; their own leaks are not ours), then line-buffered stdout so a
# log shows stdout and stderr in order.  Shared by tests/pair-lib.sh (for
# the compat and net tests), tests/cm/tools.sh and tests/pyverbs; use it as:
#   . tests/run-env.sh; sv_run_env BUILD_DIR && env "${SV_RUN_ENV[@]}" PROG ...
# Sets SV_RUN_ENV (array) and SV_RUN_SANITIZE; returns non-zero if a needed
# runtime cannot be found.

# Path of a sanitizer runtime ($2: libasan.so, libtsan.so) from the compiler
# that built $1 (gcc unless its cache says otherwise).
sv_sanitizer_runtime() {
  local build=$1 lib=$2 cc=gcc path
  if [[ -r $build/CMakeCache.txt ]]; then
    cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
    cc=${cc:-gcc}
  fi
  path=$("$cc" -print-file-name="$lib" 2>/dev/null || true)
  [[ $path == /* && -e $path ]] || path=$(gcc -print-file-name="$lib" 2>/dev/null || true)
  [[ $path == /* && -e $path ]] || return 1
  readlink -f "$path"
}

sv_run_env() {
  local build=$1 preload="" stdbuf=/usr/libexec/coreutils/libstdbuf.so
  SV_RUN_SANITIZE=${SOFTVERBS_SANITIZE-}
  if [[ -z $SV_RUN_SANITIZE && -r $build/CMakeCache.txt ]]; then
    SV_RUN_SANITIZE=$(sed -n 's/^SANITIZE:[A-Z]*=//p' "$build/CMakeCache.txt")
  fi
  SV_RUN_ENV=("LD_LIBRARY_PATH=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  if [[ $SV_RUN_SANITIZE == *address* ]]; then
    preload=$(sv_sanitizer_runtime "$build" libasan.so) || return 1
    SV_RUN_ENV+=("ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0")
  elif [[ $SV_RUN_SANITIZE == *thread* ]]; then
    preload=$(sv_sanitizer_runtime "$build" libtsan.so) || return 1
    # Debian's tools do not join their own threads (mckey, cmtime); our
    # progress thread is joined when the last context closes.
    SV_RUN_ENV+=("TSAN_OPTIONS=${TSAN_OPTIONS:+$TSAN_OPTIONS }report_thread_leaks=0")
    # libfabric's and UCX's memory hooks patch mmap/munmap in every thread,
    # and then crash inside the TSan runtime (fi_pingpong -e dgram at thread
    # exit, SIGSEGV in MutexPreReadLock; ucx_perftest at exit): not ours, so
    # they stay off.
    SV_RUN_ENV+=("FI_MR_CACHE_MONITOR=disabled" "UCX_MEM_EVENTS=no" "UCX_MEM_MALLOC_HOOKS=no"
                 "UCX_MEM_MMAP_HOOK_MODE=none")
  fi
  if [[ -e $stdbuf ]]; then
    preload=${preload:+$preload:}$stdbuf
    SV_RUN_ENV+=("_STDBUF_O=L" "_STDBUF_E=L")
  fi
  if [[ -n $preload ]]; then
    SV_RUN_ENV+=("LD_PRELOAD=$preload${LD_PRELOAD:+:$LD_PRELOAD}")
  fi
  if [[ $SV_RUN_SANITIZE == *undefined* ]]; then
    SV_RUN_ENV+=("UBSAN_OPTIONS=${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}print_stacktrace=1")
  fi
  return 0
}
