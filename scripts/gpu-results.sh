#!/usr/bin/env bash
# On a GPU machine with PyTorch and Triton installed: the results files behind the README's
# tables, both GELUs, every implementation of each suite.
#   scripts/gpu-results.sh OUT_DIR SUITE...
set -uo pipefail
out=$(realpath -m "${1:?usage: scripts/gpu-results.sh OUT_DIR SUITE...}"); shift
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || { echo "install failed"; exit 3; }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | awk '{print tolower($NF)}')
for suite in "$@"; do
  start=$(date +%s)
  python3 -m perfbot run --suite "$suite" --variant approximate=all \
    --out "$out/$gpu-$(date +%F)-$suite.json" 2>&1 | tail -4
  echo "$suite: $(( $(date +%s) - start )) s"
done
