#!/usr/bin/env bash
# As run for runs/aa-v1 and runs/aa-v2 (the first version of gpu-aa.sh, before it packed its
# output and ran the decode selftests): the pr suite A/A across the host's two GPUs, then the
# full-width A/A on one GPU. Those runs measured the working tree of their time (aa-v1: one
# capture per side and a per-round interval; aa-v2: blocks of ten rounds on fresh captures), not
# today's code; the README says what each showed.
#   experiments/2026-11-30-h200-full-width/gpu-aa-first.sh OUT
source "$(dirname "$0")/common.sh"
{ time perfbot ab HEAD --suite pr --out-dir "$out/aa-pr-2gpus" ; } > "$out/aa-pr-2gpus.txt" 2>&1
tail -4 "$out/aa-pr-2gpus.txt"
{ time timeout 480 perfbot ab HEAD --skip-kernel max-autotune --gpus 1 --out-dir "$out/aa-full-1gpu" ; } \
  > "$out/aa-full-1gpu.txt" 2>&1
tail -4 "$out/aa-full-1gpu.txt"
gzip -f "$out"/aa-*/base.json "$out"/aa-*/head.json
