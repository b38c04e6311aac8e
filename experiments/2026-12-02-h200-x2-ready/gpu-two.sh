#!/usr/bin/env bash
# Issue 36 (step 9) on `nvidia-h200-x2`, one PART a device call (each under 10 minutes), from the
# repository root with the perfbot wheels carried in .whl/ (git-ignored), as
# experiments/2026-12-02-h200-compiled/setup.sh sets them up; prepared on 2026-12-02, not yet run
# (the kind was not lent).
#   experiments/2026-12-02-h200-x2-ready/gpu-two.sh OUT PART
# PART:
#   aa           full-width A/A sharded over both GPUs, twice, and once on one GPU (the wall times)
#   tritons      the two-Triton A/B sharded (a pair of workers per GPU): the installed Triton
#                against /tmp/triton-head (bring-triton.sh's, else a copy of the installed one)
#   everything   every suite, every implementation, max-autotune included, on both GPUs
#   interference an A/A on GPU 0 with GPU 1 idle, then with GPU 1 running the heaviest case
#   selftest     perfbot selftest --gpus 2: 0.5% caught, A/A alarms
here=$(cd "$(dirname "$0")" && pwd)
part=${2:?usage: $0 OUT PART}
source "$here/../2026-12-02-h200-compiled/setup.sh"
nvidia-smi topo -m > "$out/topology.txt" 2>&1
case "$part" in
  aa)
    ab aa-2gpus-1 290 main --skip-kernel max-autotune --gpus 2
    ab aa-2gpus-2 290 main --skip-kernel max-autotune --gpus 2
    ab aa-1gpu 290 main --skip-kernel max-autotune --gpus 1
    ;;
  tritons)
    installed=$(python3 -c 'import os, triton; print(os.path.dirname(os.path.dirname(triton.__file__)))')
    base_env=/tmp/triton-base && rm -rf "$base_env" && mkdir -p "$base_env" && cp -r "$installed/triton" "$base_env/"
    head_env=/tmp/triton-head
    [ -d "$head_env/triton" ] || { mkdir -p "$head_env" && cp -r "$installed/triton" "$head_env/"; }
    PYTHONPATH=$head_env python3 -c 'import triton; print("head Triton", triton.__version__)' | tee "$out/head-triton.txt"
    for n in 1 2; do
      ab "tritons-$n" 290 main --skip-kernel max-autotune --gpus 2 --triton-env "base=$base_env" --triton-env "head=$head_env"
    done
    python3 - "$out" <<'PY' | tee "$out/tritons-gpus.txt"
import gzip, json, sys
from collections import Counter
for n in (1, 2):
    for side in ("base", "head"):
        results = json.loads(gzip.decompress(open(f"{sys.argv[1]}/tritons-{n}/{side}.json.gz", "rb").read()))
        env = results["environment"]
        gpus = Counter(b.get("gpu") for b in results["benchmarks"])
        print(f"tritons-{n} {side}: triton {env['triton']} from {env.get('triton_path')}; benchmarks by GPU {dict(gpus)}")
PY
    ;;
  everything)
    (cd /tmp/ct && { time timeout 590 perfbot run --suite all --gpus 2 --out "$out/everything.json" ; } \
      > "$out/everything.txt" 2>&1)
    tail -3 "$out/everything.txt"; gzip -f "$out/everything.json"
    ;;
  interference)
    # The same A/A on GPU 0, first beside an idle GPU 1, then beside GPU 1 timing the heaviest case
    # (models/gemma-3-27b, fused) over and over; the two base sides compared unpaired afterwards.
    CUDA_VISIBLE_DEVICES=0 ab idle 200 main --suite pr --skip-kernel max-autotune --gpus 1
    (cd /tmp/ct && while :; do CUDA_VISIBLE_DEVICES=1 perfbot sample --suite models --case gemma-3-27b \
      --kernel fused --samples 2000 > /dev/null 2>&1; done) &
    heavy=$!
    sleep 20  # its first compile done
    CUDA_VISIBLE_DEVICES=0 ab busy 200 main --suite pr --skip-kernel max-autotune --gpus 1
    kill "$heavy" 2>/dev/null; pkill -f "perfbot sample --suite models" 2>/dev/null
    gunzip -kf "$out/idle/base.json.gz" "$out/busy/base.json.gz"
    (cd /tmp/ct && perfbot compare "$out/idle/base.json" "$out/busy/base.json" --json "$out/busy-vs-idle.json") \
      > "$out/busy-vs-idle.txt" 2>&1
    tail -12 "$out/busy-vs-idle.txt"
    ;;
  selftest)
    (cd /tmp/ct && { time timeout 590 perfbot selftest --checks 40 --levels 0.5 --gpus 2 --out "$out/selftest.json" ; } \
      > "$out/selftest.txt" 2>&1)
    tail -12 "$out/selftest.txt"
    ;;
  *) echo "unknown part $part"; exit 2 ;;
esac
pack
