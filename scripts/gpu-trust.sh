#!/usr/bin/env bash
# Issue "measurement you can trust", on a GPU machine: the selftest table and the duration of the
# pull-request check (the pr suite, head against a base, interleaved).
#   scripts/gpu-trust.sh OUT_DIR
set -uo pipefail
out=$(realpath -m "${1:?usage: scripts/gpu-trust.sh OUT_DIR}")
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || { echo "install failed"; exit 3; }
python3 -m perfbot env --json > "$out/env.json"
python3 -m perfbot selftest --checks 100 --out "$out/selftest.json" 2>&1 | tee "$out/selftest.txt"
# A short (0.08 ms) decode kernel, every sample kept: it raised 1.5-2% false alarms in single
# rounds on 2026-11-30, and its samples showed position effects within a round (README).
python3 -m perfbot selftest --suite pr --case gemma-7b-m16 --checks 100 --keep-samples \
  --out "$out/selftest-decode.json" 2>&1 | tee "$out/selftest-decode.txt"
# The device tool copies the working tree without .git: make one, so that `perfbot ab` has a base
# (HEAD against itself times exactly what a pull request's check does).
if ! git rev-parse --git-dir >/dev/null 2>&1; then
  git init -q && git add -A && git -c user.name=perfbot -c user.email=perfbot@example.invalid commit -qm snapshot
fi
# Twice: the first run fills the compile caches (Triton's and torch.compile's), the second is what
# a pull request costs on a runner that keeps them.
for pass in cold warm; do
  start=$(date +%s)
  python3 -m perfbot ab HEAD --suite pr --out-dir "$out/pr-check-$pass" --overwrite 2>&1 | tail -30
  echo "pr check, $pass caches (perfbot ab HEAD --suite pr): $(( $(date +%s) - start )) s wall" | tee -a "$out/pr-check-duration.txt"
done
