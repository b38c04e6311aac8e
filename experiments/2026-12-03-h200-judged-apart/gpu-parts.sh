#!/usr/bin/env bash
# Several parts of gpu-run.sh in one device call, each cut off where the call's budget ends:
#   bash experiments/2026-12-03-h200-judged-apart/gpu-parts.sh OUT BUDGET_S PART...
# A part starts only with 60 s or more left, and runs under `timeout` of what is left.
set -u
out=${1:?usage: $0 OUT BUDGET_S PART...}; budget=${2:?}; shift 2
here=$(dirname "$0"); started=$SECONDS
for part in "$@"; do
  left=$((budget - (SECONDS - started)))
  [ "$left" -ge 60 ] || { echo "== $part: not started, ${left} s left"; continue; }
  echo "== $part (${left} s left)"
  part_started=$SECONDS
  timeout "$left" bash "$here/gpu-run.sh" "$out" "$part"
  echo "== $part: exit $?, $((SECONDS - part_started)) s"
done
