#!/usr/bin/env bash
# The cost of recording: a full-width A/A (every suite, max-autotune left out, one GPU) with the
# perfbot before recording (e743f7a, carried as .whl/old.tar: its pyproject, thresholds, kernels
# and perfbot) and with this tree's, one after the other in the order given.
#   experiments/2026-12-02-h200-compiled/gpu-cost.sh OUT "old new"
here=$(cd "$(dirname "$0")" && pwd)
source "$here/setup.sh"
rm -rf /tmp/old-tree && mkdir /tmp/old-tree && tar xf .whl/old.tar -C /tmp/old-tree
repo /tmp/old-tree /tmp/ot || { echo "the old repository could not be made"; exit 3; }
n=0
for which in ${2:-old new}; do
  n=$((n + 1))
  if [ "$which" = old ]; then use_perfbot /tmp/ot; repo_dir=/tmp/ot; else use_perfbot /tmp/ct; repo_dir=/tmp/ct; fi
  ab "aa-$which-$n" 280 main --skip-kernel max-autotune --gpus 1
  pack
done
