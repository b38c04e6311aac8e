#!/usr/bin/env bash
# Issue 55: where geglu's epilogue path (cuBLAS's matmul, then one elementwise kernel) beats the
# fused launch. From perfbot's root on the device tool's GPU, its wheels carried in .whl/:
#   bash experiments/2026-12-07-h200-epilogue/probe.sh OUT [SECONDS_PER_SUITE [VARIANT]]
# Each suite is one `perfbot run` of fused, fused-launch, fused-epilogue, eager, compiled and gemm, under
# `timeout`; a suite cut off leaves no results file, and the next one still runs. VARIANT is
# --variant's value, approximate=none by default (approximate=all: both GELUs). COMMIT, if set,
# names the tree in commit.txt (the device's copy of .git may be older than its files).
set -u
out=$(realpath -m "${1:?usage: $0 OUT [SECONDS_PER_SUITE [VARIANT]]}"); limit=${2:-200}; variant=${3:-approximate=none}
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1 || { echo "the carried wheels did not install"; exit 3; }
export PYTHONPATH=$(pwd):/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.sm,temperature.gpu --format=csv
  date -u; echo "tree: ${COMMIT:-$(git log --oneline -1)}"; } > "$out/about.txt"
for suite in generated-3 generated generated-2; do
  started=$SECONDS
  timeout "$limit" python3 -m perfbot run --suite "$suite" --kernel fused --kernel fused-launch --kernel fused-epilogue \
    --kernel eager --kernel compiled --kernel gemm --variant "$variant" --out "$out/$suite.json" > "$out/$suite.txt" 2>&1
  echo "$suite: exit $?, $((SECONDS - started)) s"
done
