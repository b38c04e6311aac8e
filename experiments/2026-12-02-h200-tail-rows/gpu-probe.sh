#!/usr/bin/env bash
# On the device tool's H200, from the repository root, with perfbot's wheels carried in .whl/:
#   experiments/2026-12-02-h200-tail-rows/gpu-probe.sh OUT    # in a checkout of 991cc65 (the tail kernel)
set -u
out=${1:?usage: $0 OUT_DIR}; mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1 || { echo "the carried wheels did not install"; exit 3; }
export PYTHONPATH=/tmp/site:. PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.sm,temperature.gpu --format=csv > "$out/gpus.txt"
git log -1 --format=%H > "$out/commit.txt" 2>/dev/null
timeout 400 python3 experiments/2026-12-02-h200-tail-rows/probe_tail_rows.py --family tail --json "$out/probe.json" > "$out/probe.txt" 2>&1
tail -60 "$out/probe.txt"
