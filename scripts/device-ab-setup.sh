# Sourced by the device-tool A/B scripts (gpu-erf-decode.sh, gpu-tanh-order.sh, gpu-gate-ab.sh)
# with $1 = OUT_DIR: install perfbot without dependencies, and turn the device tool's copy of the
# tree (which has no .git) into a repository whose main is the bundled base and whose working
# tree is this copy, the head. Before the call, here, with main at the base: git bundle create
# device-base.bundle main (the bundle is git-ignored; pass it to the device tool in carry).
set -uo pipefail
out=$(realpath -m "${1:?usage: $0 OUT_DIR}")
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || { echo "install failed"; exit 3; }
if ! git rev-parse --git-dir >/dev/null 2>&1; then
  git init -q && git fetch -q device-base.bundle main:main && git symbolic-ref HEAD refs/heads/main && git reset -q
fi
# The base also as ab-base, fetched afresh: the copy may come with a .git whose main is stale.
git fetch -q -f device-base.bundle main:ab-base
git log --oneline -1 ab-base | tee "$out/base.txt"
