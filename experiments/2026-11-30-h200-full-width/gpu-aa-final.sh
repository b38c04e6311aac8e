#!/usr/bin/env bash
# The A/A at full width on one GPU, as the pull-request check runs it (defaults: every suite,
# max-autotune left to the baseline job, a 180 s sampling budget), after the budget stopped
# counting setup.
#   experiments/2026-11-30-h200-full-width/gpu-aa-final.sh OUT
source "$(dirname "$0")/common.sh"
{ time timeout 330 perfbot ab HEAD --skip-kernel max-autotune --gpus 1 --out-dir "$out/aa-full-1gpu" ; } \
  > "$out/aa-full-1gpu.txt" 2>&1
head -1 "$out/aa-full-1gpu/comment.md"; tail -3 "$out/aa-full-1gpu.txt"
gzip -f "$out"/aa-*/base.json "$out"/aa-*/head.json
pack
