#!/usr/bin/env bash
# On the H200 of the device tool: the GELU gate written as max(z, 0) - |z| F(-|z|) (erf: degree 7)
# against the base revision, both GELUs, and the kernel's GPU tests.
#   git bundle create device-base.bundle main     # here, before the call, with main at the base
#   scripts/gpu-gate-ab.sh OUT_DIR
source "$(dirname "$0")/device-ab-setup.sh"
timeout 150 python3 -m pytest -q -m gpu tests/test_geglu.py --tb=short -p no:logging > "$out/gpu-tests-geglu.txt" 2>&1
tail -3 "$out/gpu-tests-geglu.txt"
timeout 400 python3 -m perfbot run --suite a100 --suite models --kernel fused --approximate none --approximate tanh \
  --against ab-base --out-dir "$out/gate-ab" 2>&1 | grep -v "^│\|^┃\|^┏\|^┗\|^┡\|^└\|^├" | tail -40
