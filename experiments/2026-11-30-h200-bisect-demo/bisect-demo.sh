#!/usr/bin/env bash
# A real bisect on the GPU: generate a 16-commit history of this project's kernel in which one
# commit gives the tuned large-shape config a worse tile (BLOCK_M 256 x BLOCK_N 64), then let
# `perfbot bisect` find it, measuring each probe with `perfbot sample` (perfbot's own timing).
#   scripts/bisect-demo.sh OUT_DIR
# Needs a CUDA GPU and perfbot installed (pip install -e .).
set -euo pipefail
out=$(realpath -m "${1:?usage: scripts/bisect-demo.sh OUT_DIR}")
mkdir -p "$out"
root=$(cd "$(dirname "$0")/.." && pwd)
demo=$(mktemp -d)/kernel-history
mkdir -p "$demo"
cp -r "$root/pyproject.toml" "$root/kernels" "$demo/"
rm -rf "$demo/kernels/results" "$demo/kernels/__pycache__"
cd "$demo"
export GIT_AUTHOR_NAME=perfbot GIT_AUTHOR_EMAIL=perfbot@example.invalid
export GIT_COMMITTER_NAME=perfbot GIT_COMMITTER_EMAIL=perfbot@example.invalid
git init -q
git add -A && git commit -qm "kernel as tuned"
for i in $(seq 1 15); do
  echo "change $i" >> kernels/HISTORY.txt
  if [ "$i" = 10 ]; then
    python3 - <<'PY'
import yaml, pathlib
path = pathlib.Path("kernels/tuned_configs.yaml")
table = yaml.safe_load(path.read_text())
table["NVIDIA H200"]["tma"]["large"].update(BLOCK_M=256, BLOCK_N=64, one_dot=False)
path.write_text(yaml.safe_dump(table, sort_keys=False))
PY
    git add -A && git commit -qm "change $i: retile the large-shape config (256 x 64)"
  else
    git add -A && git commit -qm "change $i"
  fi
done
git log --format='%H %s' > "$out/history.txt"
measure="python3 -m perfbot sample --project . --suite pr --case t5-v1.1-xl --kernel fused --samples 20"
set +e
python3 -m perfbot bisect --repo "$demo" --good HEAD~15 --bad HEAD --measure "$measure" \
  --state "$out/bisect-state.json" --report "$out/bisect.md" 2>&1 | tee "$out/bisect.log"
rc=${PIPESTATUS[0]}
echo "expected first bad commit: $(grep 'retile' "$out/history.txt" | cut -d' ' -f1)" | tee -a "$out/bisect.log"
exit "$rc"
