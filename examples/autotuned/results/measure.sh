#!/usr/bin/env bash
# The figures of the README's "On the H200": the example measured on one H200 (the device tool's
# machine: no network, PyTorch and Triton preinstalled, the wheels perfbot needs beside them
# carried in perfbot's git-ignored .whl/, `carry: [".whl"]`). From perfbot's root:
#   examples/autotuned/results/measure.sh OUT_DIR
# A/B runs of the example (A/As, a head that adds a config) are scripted apart.
set -uo pipefail
out=$(realpath -m "${1:?usage: $0 OUT_DIR}"); mkdir -p "$out"
root=$(pwd)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1 || { echo "the carried wheels did not install"; exit 3; }
# perfbot from this checkout (ahead of any copy among the wheels), what it needs from /tmp/site.
export PYTHONPATH=$root:/tmp/site PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv > "$out/gpu.txt"
git -C "$root" log -1 --format=%H > "$out/commit.txt" 2>/dev/null
cd examples/autotuned
# Every config of both kernels, on the GPU, at the pr shapes.
python3 -m perfbot check --suite pr > "$out/check.txt" 2>&1; echo "check exit $?" >> "$out/check.txt"
python3 -m perfbot run --suite pr --out "$out/h200.json" > "$out/run.txt" 2>&1; echo "run exit $?" >> "$out/run.txt"
python3 -m perfbot show "$out/h200.json" > "$out/show.txt" 2>&1; echo "show exit $?" >> "$out/show.txt"
for family in softmax gelu; do
  python3 -m perfbot show "$out/h200.json" --by-case "$family/triton" > "$out/by-case-$family.md" 2>&1
done
