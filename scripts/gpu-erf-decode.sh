#!/usr/bin/env bash
# On the H200 of the device tool (no network, no .git in its copy of the tree): the GPU tests,
# the new erf epilogue A/B-measured against the base revision, and the decode classes re-tuned
# with the flattened TMA candidates.
#   git bundle create device-base.bundle main     # here, before the call: the base travels as a file
#   scripts/gpu-erf-decode.sh OUT_DIR
set -uo pipefail
out=$(realpath -m "${1:?usage: scripts/gpu-erf-decode.sh OUT_DIR}")
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || { echo "install failed"; exit 3; }
# A repository whose main is the bundled base and whose working tree is this copy (the head).
if ! git rev-parse --git-dir >/dev/null 2>&1; then
  git init -q && git fetch -q device-base.bundle main:main && git symbolic-ref HEAD refs/heads/main && git reset -q
fi
git log --oneline -1 main | tee "$out/base.txt"
skip=(); python3 -c 'import github3' 2>/dev/null || skip=(--ignore tests/test_github.py --ignore tests/test_fake_github.py)
timeout 200 python3 -m pytest -q -m gpu tests/ "${skip[@]}" --tb=short -p no:logging > "$out/gpu-tests.txt" 2>&1
tail -3 "$out/gpu-tests.txt"
timeout 170 python3 -m perfbot run --suite a100 --suite models --kernel fused --approximate none \
  --against main --out-dir "$out/erf-ab" 2>&1 | tail -40
cp kernels/tuned_configs.yaml "$out/"
timeout 180 python3 scripts/tune_geglu.py --paths tma,pointer --classes gemv,decode --out "$out/tuned_configs.yaml" \
  > "$out/tune-decode.log" 2>&1
tail -12 "$out/tune-decode.log"
