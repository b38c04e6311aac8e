#!/usr/bin/env bash
# Issue 20 after each pair's two sides were put side by side in every round and cases whose time
# ran out got a second turn: the full-width A/A on one GPU, the pr suite's A/A across both GPUs,
# and `perfbot selftest` (shared across the host's GPUs) on the default benchmark and a decode
# kernel. On a host of one GPU, the pr suite's A/A across two is left out.
#   experiments/2026-12-01-h200-side-by-side/gpu-side-by-side.sh OUT
source "$(dirname "$0")/../2026-11-30-h200-full-width/common.sh"
gpus=$(nvidia-smi -L | wc -l)
{ time timeout 330 perfbot ab HEAD --skip-kernel max-autotune --gpus 1 --out-dir "$out/aa-full-1gpu" ; } \
  > "$out/aa-full-1gpu.txt" 2>&1
head -1 "$out/aa-full-1gpu/comment.md"; tail -3 "$out/aa-full-1gpu.txt"
if [ "$gpus" -ge 2 ]; then
  { time timeout 90 perfbot ab HEAD --suite pr --out-dir "$out/aa-pr-2gpus" ; } > "$out/aa-pr-2gpus.txt" 2>&1
  head -1 "$out/aa-pr-2gpus/comment.md"; tail -3 "$out/aa-pr-2gpus.txt"
fi
{ time timeout 120 perfbot selftest --checks 100 --levels 0.5 --gpus "$gpus" --out "$out/selftest-default.json" ; } 2>&1 \
  | tables > "$out/selftest-default.txt"
cat "$out/selftest-default.txt"
{ time timeout 60 perfbot selftest --suite decode --case gemma-7b-m16 --checks 60 --levels 0.5,1,2 --gpus "$gpus" \
    --out "$out/selftest-gemma-7b-m16.json" ; } 2>&1 | tables > "$out/selftest-gemma-7b-m16.txt"
cat "$out/selftest-gemma-7b-m16.txt"
gzip -f "$out"/aa-*/base.json "$out"/aa-*/head.json
pack
