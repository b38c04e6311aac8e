#!/usr/bin/env bash
# On the H200 of the device tool: the gate without its select (and erf's polynomial in t) A/B
# against the base revision, both GELUs; the kernel's GPU tests; the epilogue's SASS; two-CTA
# clusters with two dots.
#   git bundle create device-base.bundle main     # here, before the call, with main at the base
#   scripts/gpu-select-free-gate.sh OUT_DIR
source "$(dirname "$0")/device-ab-setup.sh"
timeout 150 python3 -m pytest -q -m gpu tests/test_geglu.py --tb=short -p no:logging > "$out/gpu-tests-geglu.txt" 2>&1
tail -3 "$out/gpu-tests-geglu.txt"
timeout 60 python3 scripts/epilogue_sass.py --sass-out "$out/sass" > "$out/epilogue-sass.txt" 2>&1; head -4 "$out/epilogue-sass.txt"
timeout 420 python3 -m perfbot run --suite a100 --suite models --kernel fused --approximate none --approximate tanh \
  --against ab-base --out-dir "$out/gate-ab" 2>&1 | grep -v "^┃\|^┏\|^┗\|^┡\|^└\|^├" | tail -40
timeout 150 python3 scripts/cluster_probe.py 2>&1 | grep -E "^[a-z0-9.-]+ \(|^  |^NVIDIA" > "$out/cluster-probe.txt"; cat "$out/cluster-probe.txt"
tar -czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")"
