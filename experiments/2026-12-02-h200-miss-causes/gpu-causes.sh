#!/usr/bin/env bash
# The miss-cause probe on the device tool's H200, from the repository root, perfbot's wheels
# carried in .whl/:  experiments/2026-12-02-h200-miss-causes/gpu-causes.sh OUT [PARTS [CASES]]
# PARTS and CASES are probe_miss_causes.py's --parts (default: prefill,align,split) and --cases.
set -u
out=$(realpath -m "${1:?usage: $0 OUT_DIR [PARTS]}"); parts=${2:-prefill,align,split}; cases=${3:-}; mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1 || { echo "the carried wheels did not install"; exit 3; }
export PYTHONPATH=/tmp/site:. PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.sm,temperature.gpu --format=csv > "$out/gpus.txt"
{ time timeout 540 python3 experiments/2026-12-02-h200-miss-causes/probe_miss_causes.py --parts "$parts" \
    ${cases:+--cases "$cases"} --json "$out/causes.json" ; } > "$out/causes.txt" 2>&1
tail -60 "$out/causes.txt"
