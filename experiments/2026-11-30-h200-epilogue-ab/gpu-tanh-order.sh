#!/usr/bin/env bash
# On the H200 of the device tool, after scripts/gpu-erf-decode.sh: the GELU accuracy tests, the
# tanh epilogue A/B-measured against the base revision, the TMA large/small classes re-tuned
# for the new epilogue, and the selftest of the short decode kernel with the balanced round
# order against the old rotation (the same tree with the base's perfbot/measure.py).
# Run on 2026-11-30:
#   git bundle create device-base.bundle main     # here, before the call (main was b5fca04)
#   scripts/gpu-tanh-order.sh OUT_DIR
source "$(dirname "$0")/device-ab-setup.sh"
timeout 120 python3 -m pytest -q -m gpu tests/test_geglu.py --tb=short -p no:logging > "$out/gpu-tests-geglu.txt" 2>&1
tail -3 "$out/gpu-tests-geglu.txt"
timeout 120 python3 -m perfbot run --suite a100 --suite models --kernel fused --approximate tanh \
  --against main --out-dir "$out/tanh-ab" 2>&1 | tail -16
cp kernels/tuned_configs.yaml "$out/"
timeout 150 python3 scripts/tune_geglu.py --paths tma --classes large,small --out "$out/tuned_configs.yaml" \
  > "$out/tune-large-small.log" 2>&1
grep "best on" "$out/tune-large-small.log"
selftest() { timeout 100 python3 -m perfbot selftest --suite pr --case gemma-7b-m16 --rounds 200 --keep-samples "$@" 2>&1 | tail -12; }
selftest --out "$out/selftest-decode-balanced.json"
old=/tmp/old-order; rm -rf "$old"; mkdir -p "$old"; git ls-files -co --exclude-standard | tar -cf - -T - | tar -xf - -C "$old"
git show main:perfbot/measure.py > "$old/perfbot/measure.py"
(cd "$old" && selftest --out "$out/selftest-decode-rotation.json")
timeout 150 python3 -m perfbot selftest --rounds 400 --out "$out/selftest.json" 2>&1 | tail -12
