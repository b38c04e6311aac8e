#!/usr/bin/env bash
# On the H200 of the device tool (no network, no .git in its copy of the tree): the GPU tests,
# the new erf epilogue A/B-measured against the base revision, and the decode classes re-tuned
# with the flattened TMA candidates.
# Run on 2026-11-30:
#   git bundle create device-base.bundle main     # here, before the call (main was b5fca04); the base travels as a file
#   scripts/gpu-erf-decode.sh OUT_DIR
source "$(dirname "$0")/device-ab-setup.sh"
skip=(); python3 -c 'import github3' 2>/dev/null || skip=(--ignore tests/test_github.py --ignore tests/test_fake_github.py)
timeout 200 python3 -m pytest -q -m gpu tests/ "${skip[@]}" --tb=short -p no:logging > "$out/gpu-tests.txt" 2>&1
tail -3 "$out/gpu-tests.txt"
timeout 170 python3 -m perfbot run --suite a100 --suite models --kernel fused --approximate none \
  --against main --out-dir "$out/erf-ab" 2>&1 | tail -40
cp kernels/tuned_configs.yaml "$out/"
timeout 180 python3 scripts/tune_geglu.py --paths tma,pointer --classes gemv,decode --out "$out/tuned_configs.yaml" \
  > "$out/tune-decode.log" 2>&1
tail -12 "$out/tune-decode.log"
