#!/usr/bin/env bash
# Issue 28 on the H200, first call: `pytest -m gpu`; the probe of the mechanism (probe_neighbour.py);
# then the quick suite's reproducer, main against the neighbour branch, ten times, as the
# workflow runs it from main's checkout, and the rows they flagged (flags.py).
#   experiments/2026-12-01-h200-cross-talk/gpu-quick.sh OUT
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
(cd "$tree" && timeout 220 python3 -m pytest -m gpu -q -p no:cacheprovider) > "$out/pytest-gpu.txt" 2>&1
tail -2 "$out/pytest-gpu.txt"
git -C /tmp/xt worktree add -q /tmp/xt-nb neighbour 2> /dev/null
(cd /tmp/xt && PYTHONPATH=/tmp/xt:/tmp/site timeout 100 python3 "$here/probe_neighbour.py" kernels /tmp/xt-nb/kernels 200) \
  > "$out/probe-neighbour.txt" 2>&1
cat "$out/probe-neighbour.txt"
for i in $(seq 1 10); do ab quick-$i 45 main neighbour --suite quick; done
python3 "$here/flags.py" --skip fused "$out"/quick-*/ > "$out/quick-flags.txt"
grep -A20 "^rows flagged" "$out/quick-flags.txt"
pack
