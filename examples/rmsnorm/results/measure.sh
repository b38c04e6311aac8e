#!/usr/bin/env bash
# The figures in this folder: the example measured on one H200 (the device tool's machine, no
# network, PyTorch and Triton preinstalled; pydantic's wheels in perfbot's .whl/). From perfbot's root:
#   examples/rmsnorm/results/measure.sh OUT_DIR
set -uo pipefail
out=$(realpath -m "${1:?usage: $0 OUT_DIR}"); mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --find-links .whl pydantic >/dev/null 2>&1 || { echo "pydantic install failed"; exit 3; }
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || { echo "install failed"; exit 3; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv > "$out/gpu.txt"
cd examples/rmsnorm
python3 -m perfbot check --suite pr --suite wide --variant offset=all > "$out/check.txt" 2>&1; echo "check exit $?" >> "$out/check.txt"
python3 -m perfbot run --suite pr --suite wide --variant offset=all --out "$out/h200.json" > "$out/run.txt" 2>&1; echo "run exit $?" >> "$out/run.txt"
python3 -m perfbot show "$out/h200.json" --by-case triton > "$out/by-case.md"
python3 -m perfbot selftest --suite wide --case llama-3-405b --rounds 20 --out "$out/selftest.json" > "$out/selftest.txt" 2>&1; echo "selftest exit $?" >> "$out/selftest.txt"
