#!/usr/bin/env bash
# Issue 28 on the H200: `pytest -m gpu`, then the selftests with their interference check, on the
# default benchmark (fused on pr/t5-v1.1-xl, beside pr/square-4k and pr/gemma-2b-m512) and on a
# 75 us decode kernel (fused on decode/gemma-7b-m16, beside gemma-7b-m1 and gemma-7b-m64).
#   experiments/2026-12-01-h200-cross-talk/gpu-selftests.sh OUT CHECKS
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
checks=${2:-100}
(cd "$tree" && timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider) > "$out/pytest-gpu.txt" 2>&1
tail -2 "$out/pytest-gpu.txt"
pack
st() {  # NAME TIMEOUT ARGS...
  local name=$1 limit=$2 && shift 2
  (cd /tmp/xt && { time timeout "$limit" perfbot selftest --checks "$checks" --levels 0.5 --gpus 1 "$@" \
    --out "$out/$name.json" ; } 2>&1 | tables > "$out/$name.txt")
  grep -v "^│ \(fused\|eager\|gemm\|compiled\|copy\|fused-pointer\) on" "$out/$name.txt"
  pack
}
st selftest-default 150
st selftest-decode 220 --suite decode --case gemma-7b-m16 --skip-kernel max-autotune
