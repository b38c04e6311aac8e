#!/usr/bin/env bash
# Every suite with every implementation, max-autotune included, sharded across the host's two
# GPUs (the 10-minute target): `perfbot run` of all six suites.
#   experiments/2026-11-30-h200-full-width/gpu-everything.sh OUT
source "$(dirname "$0")/common.sh"
suites=(--suite quick --suite pr --suite a100 --suite models --suite decode --suite generated)
{ time timeout 580 perfbot run "${suites[@]}" --gpus 2 --out "$out/everything-2gpus.json" ; } 2>&1 | tables \
  > "$out/everything-2gpus.txt"
tail -8 "$out/everything-2gpus.txt"
gzip -f "$out/everything-2gpus.json"
pack
