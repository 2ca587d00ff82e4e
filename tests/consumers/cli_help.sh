#!/usr/bin/env bash
# softverbs help lists the subcommands run and setup; --version answers.
set -euo pipefail
sv=$1/bin/softverbs
out=$(timeout 10 "$sv" help)
if ! grep -q '^  run ' <<<"$out" || ! grep -q '^  setup ' <<<"$out"; then
  echo "help lacks run/setup:"; echo "$out"; exit 1
fi
timeout 10 "$sv" --version | grep -q '^softverbs '
timeout 10 "$sv" help run | grep -q 'Usage: softverbs run'
echo "cli_help: ok"
