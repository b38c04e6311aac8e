#!/usr/bin/env bash
# Issue 35's Gluon runs on the device tool's H200, from the repository root:
#   experiments/2026-12-02-h200-gluon/gpu-gluon.sh OUT PARTS
# with, carried (git-ignored): .whl/ (perfbot's wheels the machine lacks), .t39/triton39.tar.xz
# (Triton 3.9.0's wheel, unpacked, stripped of its AMD backend, profiler libraries and bundled
# binaries, `tar cJ`: 39 MB, one transfer) and .t39/snap/kernels (kernels/ at the commit measured).
# Triton 3.9 compiles with the machine's CUDA 13.0 ptxas (TRITON_PTXAS_BLACKWELL_PATH), not the
# 13.4 ptxas of its wheel, which was left out to fit one transfer.
# PARTS, run in turn: "smoke" (one small shape), "gluon-models", "gluon-prefill" (gpu_gluon.py).
set -u
out=$(realpath -m "${1:?usage: $0 OUT_DIR PARTS}"); parts=${2:?usage: $0 OUT_DIR PARTS}; mkdir -p "$out"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1 || { echo "the carried wheels did not install"; exit 3; }
# The AMD backend was left out: its entry point goes too, or Triton fails to import.
[ -f /tmp/t39/triton/__init__.py ] || { mkdir -p /tmp/t39 && tar xJf .t39/triton39.tar.xz -C /tmp/t39 &&
  sed -i '/amd/d' /tmp/t39/triton-*.dist-info/entry_points.txt; } || { echo "Triton 3.9 did not unpack"; exit 3; }
export PYTHONPATH=/tmp/t39:.t39/snap:/tmp/site:. PYTHONUNBUFFERED=1 TRITON_PTXAS_BLACKWELL_PATH=/usr/local/cuda/bin/ptxas
export TRITON_DEFAULT_FP_FUSION=1  # 3.9 warns unless told; 1 is 3.6's behaviour
python3 -c 'import triton, kernels; print("Triton", triton.__version__, triton.__file__, "kernels", kernels.__file__)' \
  | tee "$out/versions.txt" || exit 3
nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.sm,temperature.gpu --format=csv > "$out/gpus.txt"
for part in $parts; do
  case $part in
    smoke) shapes=smoke limit=150 ;;
    gluon-models) shapes=models limit=240 ;;
    gluon-prefill) shapes=prefill limit=200 ;;
    *) echo "unknown part $part"; exit 2 ;;
  esac
  { time timeout "$limit" python3 "$here/gpu_gluon.py" --out "$out/$part.json" --shapes "$shapes" ; } > "$out/$part.txt" 2>&1
  rc=$?
  tail -20 "$out/$part.txt"
  if [ "$part" = smoke ] && { [ $rc -ne 0 ] || grep -q WRONG "$out/$part.txt"; }; then echo "smoke failed (rc $rc): stopping"; exit 1; fi
done
