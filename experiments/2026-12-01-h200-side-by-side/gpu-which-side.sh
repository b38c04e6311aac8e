#!/usr/bin/env bash
# In every full-width A/A, fused on t5-v1.1-xl ran 0.3-0.6% faster on the head side, and
# probe_loads.py found three loads of the kernels alike. Is it the head being the checkout's own
# kernels (loaded before the run) rather than a worktree's? The pr suite's fused and gemm: A/A with
# the head from the checkout (`perfbot ab HEAD`), then with both sides from worktrees
# (`perfbot ab HEAD HEAD`), twice each, alternating.
#   experiments/2026-12-01-h200-side-by-side/gpu-which-side.sh OUT
source "$(dirname "$0")/../2026-11-30-h200-full-width/common.sh"
for run in 1 2; do
  for way in checkout worktrees; do
    head=(); [ "$way" = worktrees ] && head=(HEAD)
    { time timeout 120 perfbot ab HEAD "${head[@]}" --suite pr --kernel fused --kernel gemm \
        --out-dir "$out/$way-$run" ; } > "$out/$way-$run.txt" 2>&1
    echo "$way $run: $(head -1 "$out/$way-$run/comment.md")"
    grep "t5-v1.1-xl" "$out/$way-$run/comment.md" | cut -d'|' -f2-7
  done
done
gzip -f "$out"/*/base.json "$out"/*/head.json
pack
