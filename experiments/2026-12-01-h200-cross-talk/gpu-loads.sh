#!/usr/bin/env bash
# Issue 28 on the H200, last call: the loads probe (probe_loads.py), the interference check alone
# on the decode case over 1600 rounds (interference_only.py), and a second full-width reproducer.
#   experiments/2026-12-01-h200-cross-talk/gpu-loads.sh OUT
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
(cd /tmp/xt && PYTHONPATH=/tmp/xt:/tmp/site timeout 120 python3 "$here/probe_loads.py" kernels 6 100) \
  > "$out/probe-loads.txt" 2>&1
cat "$out/probe-loads.txt"; pack
(cd /tmp/xt && PYTHONPATH=/tmp/xt:/tmp/site timeout 150 python3 "$here/interference_only.py" kernels decode \
  gemma-7b-m16 1600 max-autotune) > "$out/interference-decode-1600.json" 2> "$out/interference-decode-1600.txt"
tail -20 "$out/interference-decode-1600.txt"; pack
ab full-2 280 main neighbour --skip-kernel max-autotune --gpus 1
python3 "$here/flags.py" --skip fused "$out/full-2/" > "$out/full-flags.txt"
grep -v "^  fused on" "$out/full-flags.txt" | tail -8
pack
