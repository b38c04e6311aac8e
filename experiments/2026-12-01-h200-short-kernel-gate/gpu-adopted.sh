#!/usr/bin/env bash
# Issue 20, after thresholds.yaml took the gate of thresholds-0.03.yaml: the full-width A/A once
# more under the repository's thresholds, and the selftest at the foot of the 0.5% band (a 32 us
# fused kernel of the generated suite).
#   experiments/2026-12-01-h200-short-kernel-gate/gpu-adopted.sh OUT
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../2026-11-30-h200-full-width/common.sh"
{ time timeout 300 perfbot ab HEAD --skip-kernel max-autotune --gpus 1 --out-dir "$out/aa-adopted" ; } \
  > "$out/aa-adopted.txt" 2>&1
head -1 "$out/aa-adopted/comment.md"; tail -4 "$out/aa-adopted.txt"
gzip -f "$out/aa-adopted"/*.json
{ time timeout 150 perfbot selftest --suite generated --case llama-3.2-3b-m107 --checks 60 --levels 0.5 --gpus 1 \
    --out "$out/selftest-llama-3.2-3b-m107.json" ; } 2>&1 | tables > "$out/selftest-llama-3.2-3b-m107.txt"
cat "$out/selftest-llama-3.2-3b-m107.txt"
pack
