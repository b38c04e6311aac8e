#!/usr/bin/env bash
# On the H200 of the device tool: does the L2 flush's write-back weigh on decode timings
# (scripts/flush_probe.py), and do two programs per SM hide the epilogue (scripts/tune_geglu.py
# over the flattened one-product candidates, old and new, written to a scratch file).
#   scripts/gpu-two-per-sm.sh OUT_DIR
set -uo pipefail
out=$(realpath -m "${1:?usage: scripts/gpu-two-per-sm.sh OUT_DIR}")
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || { echo "install failed"; exit 3; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee "$out/gpu.txt"
cp kernels/tuned_configs.yaml "$out/"
python3 scripts/flush_probe.py 2>&1 | tee "$out/flush-probe.txt"
python3 scripts/tune_geglu.py --paths tma --classes large,small,decode,gemv --where one_dot=True,flatten=True \
  --out "$out/tuned_configs.yaml" 2>&1 | tee "$out/tune-two-per-sm.log"
