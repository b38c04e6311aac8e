#!/usr/bin/env bash
# The last GPU calls for issue 34: `python -m pytest -m gpu` on the tree as it is to be resolved,
# then the cost of recording once more, this tree's full-width A/A and then e743f7a's. The parts
# run in two calls, as the three together come close to one call's 600 s:
#   experiments/2026-12-02-h200-compiled/gpu-final.sh OUT new   # GPU tests, this tree's A/A
#   experiments/2026-12-02-h200-compiled/gpu-final.sh OUT old   # e743f7a's A/A
here=$(cd "$(dirname "$0")" && pwd)
part=${2:-new}
source "$here/setup.sh"
if [ "$part" = new ]; then
  (cd "$tree" && timeout 300 python3 -m pytest -m gpu -q -p no:cacheprovider) > "$out/pytest-gpu.txt" 2>&1
  tail -3 "$out/pytest-gpu.txt"; pack
  use_perfbot /tmp/ct; repo_dir=/tmp/ct ab aa-new-3 200 main --skip-kernel max-autotune --gpus 1
else
  rm -rf /tmp/old-tree && mkdir /tmp/old-tree && tar xf .whl/old.tar -C /tmp/old-tree
  repo /tmp/old-tree /tmp/ot || { echo "the old repository could not be made"; exit 3; }
  use_perfbot /tmp/ot; repo_dir=/tmp/ot ab aa-old-3 200 main --skip-kernel max-autotune --gpus 1
fi
pack
