#!/usr/bin/env bash
# watchdog.sh SECS PROG [ARGS...]: run PROG as `timeout -k 5 SECS PROG ARGS`
# does (exit 124 when it ran out of time; a TERM, INT or HUP we get goes to
# PROG and its descendants), but before stopping them print on stderr the stack of every thread
# of PROG and of its descendants.  A test that hangs once in a while in CI
# then says where it hung; a killed program says nothing.
#
# The stacks come from gdb when it is installed (scripts/deps.sh, tools),
# otherwise from the kernel's wait channels.  PROG is the first child of
# this script (tests/net/lib.sh, svn_prog_pid, relies on it).
set -u

secs=$1
shift

# dump_one PID: one process's threads
dump_one() {
  local pid=$1 t
  echo "[watchdog] pid $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
  if command -v gdb >/dev/null 2>&1; then
    timeout 60 gdb -batch -nx -p "$pid" -ex 'thread apply all bt 24' </dev/null 2>&1 |
      grep -E '^(Thread |#[0-9])' | sed 's/^/[watchdog]   /'
  else
    for t in /proc/"$pid"/task/*; do
      echo "[watchdog]   thread ${t##*/} ($(cat "$t/comm" 2>/dev/null)): waits in $(cat "$t/wchan" 2>/dev/null)"
    done
  fi
}

# descendants PID: PID and every process below it
descendants() {
  local c all=()
  echo "$1"
  read -ra all < <(cat /proc/"$1"/task/*/children 2>/dev/null) || true
  for c in "${all[@]}"; do
    descendants "$c"
  done
}

"$@" <&0 &               # (a background job's stdin would be /dev/null)
pid=$!

stop() {
  local pids
  mapfile -t pids < <(descendants "$pid")
  kill "-$1" "${pids[@]}" 2>/dev/null
}

(
  sleep "$secs" >/dev/null 2>&1 &
  s=$!
  trap 'kill "$s" 2>/dev/null; exit 0' TERM
  wait "$s"
  kill -0 "$pid" 2>/dev/null || exit 0
  trap '' TERM                      # fired: we report 124, whatever comes
  echo "[watchdog] still running after ${secs}s: the stacks of its threads follow"
  mapfile -t pids < <(descendants "$pid")
  for p in "${pids[@]}"; do
    dump_one "$p"
  done
  stop TERM
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || exit 1
    sleep 0.1
  done
  stop KILL
  exit 1
) >&2 &
watcher=$!

trap 'stop TERM' TERM INT HUP
rc=0
wait "$pid" || rc=$?
# a signal we trapped ends the wait early: wait again, for PROG's end
while kill -0 "$pid" 2>/dev/null; do
  rc=0
  wait "$pid" || rc=$?
done
kill -TERM "$watcher" 2>/dev/null
wrc=0
wait "$watcher" || wrc=$?
((wrc == 1)) && exit 124
exit "$rc"
