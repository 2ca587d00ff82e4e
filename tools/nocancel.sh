#!/usr/bin/env bash
# tools/nocancel.sh [ROOT]: libibverbs' own code makes no libc call that is
# a cancellation point (read, write, recv, send, epoll_wait, poll, close,
# ...) except through src/util/sys.h, whose comment says why: a verb that
# holds QP locks or guards must not end in a cancelled thread's unwind.
# A call meant to be one (a blocking wait the application may cancel, as
# it may rdma-core's) carries the comment "cancellation point" on its
# line; one made with cancellation disabled, "cancellation off".  Prints
# each other call and exits 1 if there is one, 0 when clean.
set -euo pipefail
export LC_ALL=C

root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cd "$root"
[[ -d src ]] || { echo "nocancel: $root has no src/" >&2; exit 2; }

# The libraries' layers (cm, rs and cli are librdmacm and the CLI: their
# blocking calls are the application's, as in rdma-core).
dirs=(src/engine src/status src/transport src/util src/verbs)
calls='read|write|readv|writev|pread|pwrite|recv|recvfrom|recvmsg|send|sendto|sendmsg'
calls+='|epoll_wait|epoll_pwait|poll|ppoll|select|close|connect|accept|accept4|open|openat'
calls+='|nanosleep|clock_nanosleep|usleep|sleep|pause|sigwait|pthread_cond_wait'
calls+='|pthread_cond_timedwait|pthread_join|sem_wait|sem_timedwait|fsync|msync'
calls+='|printf|fprintf|vfprintf|puts|fputs|fwrite|fflush'

bad=0
while IFS= read -r hit; do
  text=${hit#*:*:}
  # comments, and the lines that say what they are
  [[ $text =~ ^[[:space:]]*(/\*|\*) ]] && continue
  [[ $text == *"cancellation point"* || $text == *"cancellation off"* ]] && continue
  echo "$hit"
  bad=1
done < <(grep -rnE --include='*.c' "(^|[^[:alnum:]_>.])($calls)\(" "${dirs[@]}" || true)

if ((bad)); then
  echo "nocancel: call the util/sys.h wrapper, or say on the line why it may be a cancellation point" >&2
  exit 1
fi
echo "nocancel: clean"
