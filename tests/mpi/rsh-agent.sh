#!/usr/bin/env bash
# Open MPI's rsh agent for the test hosts of tests/net: mpirun (in h1) calls
# `rsh-agent.sh [OPTIONS] HOST COMMAND...` as it would call ssh; HOST is a
# test host's address (10.77.0.1 or 10.77.0.2) and COMMAND, a shell command
# line as ssh would pass it on, runs in that host under `softverbs run` (its
# own device node and sysfs tree).  The pair of hosts is the one named by
# SOFTVERBS_HOSTS_ID, which mpirun's environment carries here.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
while [[ $# -gt 0 && $1 == -* ]]; do shift; done     # ssh options, if any
[[ $# -ge 2 ]] || { echo "usage: $0 HOST COMMAND..." >&2; exit 2; }
host=$1; shift
case $host in
  10.77.0.1|h1|sv-*h1) h=h1 ;;
  10.77.0.2|h2|sv-*h2) h=h2 ;;
  *) echo "rsh-agent.sh: unknown test host '$host'" >&2; exit 255 ;;
esac
: "${SOFTVERBS_CLI:?rsh-agent.sh: SOFTVERBS_CLI (the softverbs program) is not set}"
exec "$here/../net/hosts.sh" exec "$h" "$SOFTVERBS_CLI" run -- sh -c "$*"
