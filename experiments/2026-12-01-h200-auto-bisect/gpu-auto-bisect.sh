#!/usr/bin/env bash
# Issue 30's auto-bisect on the H200, the GPU part of the baseline workflow's new jobs run by hand:
# a repository of this tree with 11 commits on a branch `demo`, the 7th (c6) the reproducer's
# real slowdown (../2026-12-01-h200-cross-talk/neighbour.py: fused on quick/odd ~10% slower), a
# store whose runs "measured" those commits (make_store.py), `perfbot history --check
# --steps-json`, then `perfbot history bisect-steps` as the bisect job runs it.
#   experiments/2026-12-01-h200-auto-bisect/gpu-auto-bisect.sh OUT
self=$(cd "$(dirname "$0")" && pwd)  # common.sh sets its own $here
source "$self/../2026-12-01-h200-cross-talk/common.sh"
git_=(git -c user.name=perfbot -c user.email=perfbot@localhost)
cd /tmp/xt && "${git_[@]}" checkout -qb demo main
for i in $(seq 1 10); do
  if [ "$i" = 6 ]; then python3 "$self/../2026-12-01-h200-cross-talk/neighbour.py" kernels; "${git_[@]}" commit -qam "c6: two launch configs of the TMA path"
  else echo "$i" > demo.txt && "${git_[@]}" add demo.txt && "${git_[@]}" commit -qm "c$i: nothing"; fi
done
git log --oneline --reverse > "$out/demo-commits.txt"; cat "$out/demo-commits.txt"
rm -rf /tmp/demo-store
PYTHONPATH=$tree:/tmp/site python3 "$self/make_store.py" /tmp/xt /tmp/demo-store 6 | tee "$out/store.txt"
results=$(find /tmp/demo-store -name '*.json' -path '*nvidia-h200*' | sort | head -1)
perfbot history --store /tmp/demo-store --check --steps-json "$out/steps.json" --runner "h200=$results" \
  > "$out/check.txt" 2>&1; echo "check: rc $?" | tee -a "$out/check.txt"; cat "$out/check.txt"; pack
{ time timeout 420 perfbot history bisect-steps --steps "$out/steps.json" --runner h200 --out "$out/bisect" ; } \
  > "$out/bisect-steps.txt" 2>&1; echo "bisect-steps: rc $?" | tee -a "$out/bisect-steps.txt"
cat "$out/bisect-steps.txt"; ls "$out/bisect"; pack
