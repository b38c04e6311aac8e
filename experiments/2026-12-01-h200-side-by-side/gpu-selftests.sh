#!/usr/bin/env bash
# The two selftests of gpu-side-by-side.sh alone, after the calibration took the checks' order.
#   experiments/2026-12-01-h200-side-by-side/gpu-selftests.sh OUT
source "$(dirname "$0")/../2026-11-30-h200-full-width/common.sh"
gpus=$(nvidia-smi -L | wc -l)
{ time timeout 120 perfbot selftest --checks 100 --levels 0.5 --gpus "$gpus" --out "$out/selftest-default.json" ; } 2>&1 \
  | tables > "$out/selftest-default.txt"
cat "$out/selftest-default.txt"
{ time timeout 90 perfbot selftest --suite decode --case gemma-7b-m16 --checks 60 --levels 0.5,1,2 --gpus "$gpus" \
    --out "$out/selftest-gemma-7b-m16.json" ; } 2>&1 | tables > "$out/selftest-gemma-7b-m16.txt"
cat "$out/selftest-gemma-7b-m16.txt"
pack
