#!/usr/bin/env bash
# probe_loads.py: do three loads of the same kernels time alike?
#   experiments/2026-12-01-h200-side-by-side/gpu-probe-loads.sh OUT
here=$(cd "$(dirname "$0")" && pwd)
root=$PWD
source "$here/../2026-11-30-h200-full-width/common.sh"
cd "$root"  # common.sh ends in /tmp/aa; the probe runs from the repository root
PYTHONPATH=. timeout 300 python3 "$here/probe_loads.py" > "$out/probe_loads.txt" 2>&1
cat "$out/probe_loads.txt"
pack
