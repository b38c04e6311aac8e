#!/usr/bin/env bash
# Issue 34's targets on the H200: the GPU tests of the records; decode's BLOCK_K branch on the
# decode suite; the spilling branch on the a100 suite (its d512 and d1024 are the small class);
# a full-width A/A, as the pull-request check runs it (every suite, max-autotune left out).
#   experiments/2026-12-02-h200-compiled/gpu-targets.sh OUT
here=$(cd "$(dirname "$0")" && pwd)
source "$here/setup.sh"
(cd "$tree" && timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_compiling.py) > "$out/pytest-compiling.txt" 2>&1
tail -2 "$out/pytest-compiling.txt"; pack
ab block-k 150 main block-k --suite decode --skip-kernel max-autotune --gpus 1
pack
ab spills 150 main spills --suite a100 --skip-kernel max-autotune --gpus 1
pack
ab aa-new-1 260 main --skip-kernel max-autotune --gpus 1
pack
