#!/usr/bin/env bash
# Whether the other GPU of the host disturbs GPU 0: the pr and decode suites timed on GPU 0 alone,
# then while GPU 1 runs the heaviest case of the suites (neighbor_load.py), compared across the
# two runs (`perfbot compare`); and an A/A of them on GPU 0 under that load.
#   experiments/2026-11-30-h200-full-width/gpu-interference.sh OUT
source "$(dirname "$0")/common.sh"
cp "$OLDPWD"/experiments/2026-11-30-h200-full-width/neighbor_load.py /tmp/aa/
run=(run --suite pr --suite decode --skip-kernel max-autotune --samples 100)
CUDA_VISIBLE_DEVICES=0 perfbot "${run[@]}" --out "$out/alone.json" > /dev/null 2>&1
CUDA_VISIBLE_DEVICES=1 PYTHONPATH=/tmp/aa python3 /tmp/aa/neighbor_load.py 120 > "$out/neighbor.txt" 2>&1 &
sleep 20  # the neighbor compiled, loaded and at full power
nvidia-smi --query-gpu=index,power.draw,clocks.sm,utilization.gpu --format=csv > "$out/gpus-loaded.txt"
CUDA_VISIBLE_DEVICES=0 perfbot "${run[@]}" --out "$out/loaded.json" > /dev/null 2>&1
{ time CUDA_VISIBLE_DEVICES=0 perfbot ab HEAD --suite pr --suite decode --skip-kernel max-autotune \
    --out-dir "$out/aa-loaded" ; } > "$out/aa-loaded.txt" 2>&1
nvidia-smi --query-gpu=index,power.draw,clocks.sm,utilization.gpu --format=csv >> "$out/gpus-loaded.txt"
head -1 "$out/aa-loaded/comment.md"; tail -3 "$out/aa-loaded.txt"
perfbot compare "$out/alone.json" "$out/loaded.json" --json "$out/alone-vs-loaded.json" 2>&1 | tables \
  > "$out/alone-vs-loaded.txt"
head -3 "$out/alone-vs-loaded.txt"
wait
cat "$out/neighbor.txt" "$out/gpus-loaded.txt"
gzip -f "$out"/alone.json "$out"/loaded.json "$out"/aa-loaded/base.json "$out"/aa-loaded/head.json
pack
