#!/usr/bin/env bash
# The session's last GPU check: `python -m pytest -m gpu` on the tree as it is to be resolved.
#   experiments/2026-12-01-h200-own-checkout/gpu-final.sh OUT
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../2026-12-01-h200-cross-talk/common.sh"
(cd "$tree" && timeout 260 python3 -m pytest -m gpu -q -p no:cacheprovider) > "$out/pytest-gpu.txt" 2>&1
tail -3 "$out/pytest-gpu.txt"; pack
