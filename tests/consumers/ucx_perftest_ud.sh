#!/usr/bin/env bash
# tag_lat over ud_verbs.
exec bash "$(dirname "$0")/ucx_perftest.sh" "$1" ud_verbs,self
