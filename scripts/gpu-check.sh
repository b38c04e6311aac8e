#!/usr/bin/env bash
# On a GPU machine with PyTorch and Triton installed and no network (the H200 of the device tool):
# install perfbot without dependencies, run the GPU tests, then measure the given suites.
#   scripts/gpu-check.sh OUT_DIR [SUITE...]
set -uo pipefail
out=${1:?usage: scripts/gpu-check.sh OUT_DIR [SUITE...]}; shift
export PYTHONUNBUFFERED=1
mkdir -p "$out"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || { echo "install failed"; exit 3; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
# The GPU machine lacks github3.py (the gpu extra does not need it, and perfbot is installed there
# with --no-deps); the GitHub tests that need it have no GPU part, so leave their modules out there
# instead of failing to collect them.
skip=(); python3 -c 'import github3' 2>/dev/null || skip=(--ignore tests/test_github.py --ignore tests/test_fake_github.py)
python3 -m pytest -q -m gpu tests/ "${skip[@]}" --tb=short -p no:logging 2>&1 | tee "$out/gpu-tests.txt" | tail -25
if [ $# -gt 0 ]; then
  args=(); for suite in "$@"; do args+=(--suite "$suite"); done
  python3 -m perfbot run "${args[@]}" --out "$out/results.json"
fi
