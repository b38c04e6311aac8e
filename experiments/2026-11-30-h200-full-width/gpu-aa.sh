#!/usr/bin/env bash
# The A/A at full width: the tree against itself, every suite, every implementation but
# max-autotune, sequential sampling; first the pr suite sharded across the host's two GPUs (a
# check of the sharding), then full width on one GPU (the 5-minute target). Then `perfbot
# selftest` on two decode kernels: gemma-7b at M=1 (under 80 µs: the short-kernel rule) and at
# M=16 (the 0.5% rule).
#   experiments/2026-11-30-h200-full-width/gpu-aa.sh OUT
source "$(dirname "$0")/common.sh"
{ time perfbot ab HEAD --suite pr --out-dir "$out/aa-pr-2gpus" ; } > "$out/aa-pr-2gpus.txt" 2>&1
head -1 "$out/aa-pr-2gpus/comment.md"; tail -3 "$out/aa-pr-2gpus.txt"
{ time timeout 400 perfbot ab HEAD --skip-kernel max-autotune --gpus 1 --out-dir "$out/aa-full-1gpu" ; } \
  > "$out/aa-full-1gpu.txt" 2>&1
head -1 "$out/aa-full-1gpu/comment.md"; tail -3 "$out/aa-full-1gpu.txt"
gzip -f "$out"/aa-*/base.json "$out"/aa-*/head.json
export CUDA_VISIBLE_DEVICES=0
for case in gemma-7b-m1:0.5,2:40 gemma-7b-m16:0.5:60; do
  IFS=: read -r name levels checks <<< "$case"
  { time timeout 150 perfbot selftest --suite decode --case "$name" --checks "$checks" --levels "$levels" \
      --out "$out/selftest-$name.json" ; } 2>&1 | tables > "$out/selftest-$name.txt"
  cat "$out/selftest-$name.txt"
done
pack
