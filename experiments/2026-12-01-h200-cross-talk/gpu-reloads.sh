#!/usr/bin/env bash
# Issue 28 on the H200, the session's last minutes: `pytest -m gpu` on the final code, then the
# reloads probe (probe_reloads.py).
#   experiments/2026-12-01-h200-cross-talk/gpu-reloads.sh OUT
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
(cd "$tree" && timeout 190 python3 -m pytest -m gpu -q -p no:cacheprovider) > "$out/pytest-gpu.txt" 2>&1
tail -1 "$out/pytest-gpu.txt"; pack
(cd /tmp/xt && PYTHONPATH=/tmp/xt:/tmp/site timeout 80 python3 "$here/probe_reloads.py" kernels 4 64 8) \
  > "$out/probe-reloads.txt" 2>&1
cat "$out/probe-reloads.txt"; pack
