#!/usr/bin/env bash
# Issue 28 on the H200: the reproducer at full width (main against the neighbour branch, every
# suite but max-autotune, as the pull-request check runs it), then a full-width A/A (main
# against itself), and the rows they flagged (flags.py).
#   experiments/2026-12-01-h200-cross-talk/gpu-full-width.sh OUT [A/A NAME]
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
aa=${2:-aa-1}
ab full-1 290 main neighbour --skip-kernel max-autotune --gpus 1
pack
ab "$aa" 260 main --skip-kernel max-autotune --gpus 1
pack
python3 "$here/flags.py" --skip fused "$out/full-1/" > "$out/full-flags.txt"
python3 "$here/flags.py" "$out/$aa/" > "$out/aa-flags.txt"
cat "$out/full-flags.txt" | grep -v "^  fused on" | tail -12; tail -6 "$out/aa-flags.txt"
pack
