#!/usr/bin/env bash
# On the H200 of the device tool, after scripts/gpu-retune-verify.sh: the epilogue's SASS (erf
# against tanh), a two-CTA cluster for the large shapes, and clocks and power under gemm and fused.
#   scripts/gpu-cluster-power.sh OUT_DIR
set -uo pipefail
out=$(realpath -m "${1:?usage: scripts/gpu-cluster-power.sh OUT_DIR}")
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || { echo "install failed"; exit 3; }
timeout 90 python3 scripts/epilogue_sass.py --sass-out "$out/sass" > "$out/epilogue-sass.txt" 2>&1; head -40 "$out/epilogue-sass.txt"
timeout 240 python3 scripts/cluster_probe.py > "$out/cluster-probe.txt" 2>&1; cat "$out/cluster-probe.txt" | cut -c1-250
for case in gemma-3-27b d4096; do
  timeout 60 python3 scripts/power_probe.py --case $case > "$out/power-$case.txt" 2>&1; cat "$out/power-$case.txt"
done
tar -czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")"
