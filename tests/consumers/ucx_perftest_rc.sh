#!/usr/bin/env bash
# tag_lat over rc_verbs (UD only to wire up: rc_verbs alone has no way to connect).
exec bash "$(dirname "$0")/ucx_perftest.sh" "$1" rc_verbs,ud_verbs:aux,self
