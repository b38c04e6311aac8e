#!/usr/bin/env bash
# Issue "measurement you can trust", on a GPU machine without network: the A/B run across two
# Triton environments (one worker process per side, alternating sample by sample). With no
# network to build two commits, both environments are copies of the installed Triton in
# directories of their own; the results record which one each worker imported (triton_path).
#   scripts/gpu-two-tritons.sh OUT_DIR
set -uo pipefail
out=$(realpath -m "${1:?usage: scripts/gpu-two-tritons.sh OUT_DIR}")
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || { echo "install failed"; exit 3; }
if ! git rev-parse --git-dir >/dev/null 2>&1; then  # the device tool's copy has no .git
  git init -q && git add -A && git -c user.name=perfbot -c user.email=perfbot@example.invalid commit -qm snapshot
fi
installed=$(python3 -c 'import os, triton; print(os.path.dirname(triton.__file__))')
envs=$(mktemp -d)
for side in base head; do mkdir -p "$envs/$side" && cp -r "$installed" "$envs/$side/"; done
start=$(date +%s)
python3 -m perfbot run --suite pr --against HEAD --out-dir "$out/two-tritons" --overwrite \
  --triton-env "base=$envs/base" --triton-env "head=$envs/head" 2>&1 | tail -30
echo "pr check in two worker processes (perfbot run --suite pr --against HEAD --triton-env base=... --triton-env head=...): $(( $(date +%s) - start )) s wall" | tee "$out/two-tritons-duration.txt"
python3 - "$out/two-tritons" <<'PY'
import json, sys
for side in ("base", "head"):
    env = json.load(open(f"{sys.argv[1]}/{side}.json"))["environment"]
    print(side, "imported triton", env["triton"], "from", env["triton_path"])
PY
