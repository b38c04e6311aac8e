#!/usr/bin/env bash
# Issue 35's runs on the device tool's H200, from the repository root, perfbot's wheels carried
# in .whl/, one part a call (each fits one call's 600 s):
#   experiments/2026-12-02-h200-cublas-gap/gpu-run.sh OUT generated     # the first generated set
#   experiments/2026-12-02-h200-cublas-gap/gpu-run.sh OUT generated-2   # the second, held-out set
#   experiments/2026-12-02-h200-cublas-gap/gpu-run.sh OUT bound         # the decode-bound probe
#   experiments/2026-12-02-h200-cublas-gap/gpu-run.sh OUT tests         # python -m pytest -m gpu
# Each generated set: every implementation its suite lists, both GELUs in one run (paired).
# PARTS may name several, run in turn: "generated bound".
set -u
out=$(realpath -m "${1:?usage: $0 OUT_DIR PARTS}"); parts=${2:?usage: $0 OUT_DIR PARTS}; mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1 || { echo "the carried wheels did not install"; exit 3; }
export PYTHONPATH=/tmp/site:. PYTHONUNBUFFERED=1
mkdir -p /tmp/bin && printf '%s\n' '#!/usr/bin/env bash' \
  'exec python3 -c "import sys; from perfbot.cli import perfbot; sys.argv[0] = \"perfbot\"; perfbot()" "$@"' > /tmp/bin/perfbot
chmod +x /tmp/bin/perfbot && export PATH=/tmp/bin:$PATH  # a program, as timeout runs it
git log -1 --format=%H > "$out/commit.txt" 2>/dev/null
for part in $parts; do
nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.sm,temperature.gpu --format=csv > "$out/gpus-$part.txt"
case $part in
  generated|generated-2)
    { time timeout 480 perfbot run --suite "$part" --variant approximate=all --out "$out/$part.json" ; } \
      > "$out/$part.txt" 2>&1
    tail -5 "$out/$part.txt" ;;
  bound)
    timeout 200 python3 experiments/2026-12-02-h200-decode-bound/probe_launch_bound.py \
      --json "$out/bound.json" > "$out/bound.txt" 2>&1
    tail -5 "$out/bound.txt" ;;
  tests)
    timeout 330 python3 -m pytest -m gpu -q -p no:cacheprovider > "$out/pytest-gpu.txt" 2>&1
    tail -3 "$out/pytest-gpu.txt" ;;
  *) echo "unknown part $part"; exit 2 ;;
esac
done
