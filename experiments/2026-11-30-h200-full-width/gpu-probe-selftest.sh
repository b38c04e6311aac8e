#!/usr/bin/env bash
# As run for runs/probe-selftest: probe_placement.py, then `perfbot selftest` on the default
# benchmark, on GPU 0 (with the code of that time: blocks of ten rounds, no short-kernel rule).
#   experiments/2026-11-30-h200-full-width/gpu-probe-selftest.sh OUT
source "$(dirname "$0")/common.sh"
export CUDA_VISIBLE_DEVICES=0
cp "$OLDPWD"/experiments/2026-11-30-h200-full-width/probe_placement.py /tmp/aa/
PYTHONPATH=/tmp/aa python3 /tmp/aa/probe_placement.py > "$out/probe_placement.txt" 2>&1
cat "$out/probe_placement.txt"
{ time perfbot selftest --checks 100 --levels 0.5 --out "$out/selftest-default.json" ; } 2>&1 | tables \
  > "$out/selftest-default.txt"
cat "$out/selftest-default.txt"
