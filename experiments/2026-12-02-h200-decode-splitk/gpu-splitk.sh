#!/usr/bin/env bash
# Issue 35's split-K decode runs on the device tool's H200, from the repository root, perfbot's
# wheels carried in .whl/:  experiments/2026-12-02-h200-decode-splitk/gpu-splitk.sh OUT PARTS
#   tests   python -m pytest -m gpu
#   splitk  perfbot run on the decode shapes of both generated sets whose plans split K now, and
#           one that does not, with every implementation but max-autotune, both GELUs paired
set -u
out=$(realpath -m "${1:?usage: $0 OUT_DIR PARTS}"); parts=${2:?usage: $0 OUT_DIR PARTS}; mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1 || { echo "the carried wheels did not install"; exit 3; }
export PYTHONPATH=/tmp/site:. PYTHONUNBUFFERED=1
mkdir -p /tmp/bin && printf '%s\n' '#!/usr/bin/env bash' \
  'exec python3 -c "import sys; from perfbot.cli import perfbot; sys.argv[0] = \"perfbot\"; perfbot()" "$@"' > /tmp/bin/perfbot
chmod +x /tmp/bin/perfbot && export PATH=/tmp/bin:$PATH
nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.sm,temperature.gpu --format=csv > "$out/gpus.txt"
for part in $parts; do
case $part in
  tests)
    { time timeout 330 python3 -m pytest -m gpu -q -p no:cacheprovider ; } > "$out/pytest-gpu.txt" 2>&1
    tail -12 "$out/pytest-gpu.txt" ;;
  splitk)
    { time timeout 200 perfbot run --suite generated --suite generated-2 --case bert-large-m1 --case odd-m21 \
        --case gemma-3-1b-m1 --skip-kernel max-autotune --variant approximate=all --out "$out/splitk.json" ; } \
      > "$out/splitk.txt" 2>&1
    tail -30 "$out/splitk.txt" ;;
  *) echo "unknown part $part"; exit 2 ;;
esac
done
