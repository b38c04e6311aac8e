#!/usr/bin/env bash
# Issue 54's H200 runs, from perfbot's root on a GPU machine, its wheels carried in .whl/ (installed
# to /tmp/site as experiments/2026-12-03-h200-judged-apart/gpu-run.sh does):
#   bash experiments/2026-12-07-geglu-backward/gpu-run.sh OUT tests      # pytest -m gpu, the backward's tests
#   bash experiments/2026-12-07-geglu-backward/gpu-run.sh OUT suites     # backward-a100 and backward-models, reported
#   bash experiments/2026-12-07-geglu-backward/gpu-run.sh OUT generated  # backward-generated, reported
#   bash experiments/2026-12-07-geglu-backward/gpu-run.sh OUT selftest   # A/A and 1% on t5-v1.1-xl's backward
#   bash experiments/2026-12-07-geglu-backward/gpu-run.sh OUT bench      # bench.py: save, recompute, memory
# Each part writes under OUT/PART and stays under 9 minutes (timeout 530 s a command). Then, here:
#   python -m kernels.report OUT/suites/backward.json OUT/generated/backward-generated.json --write docs/kernel.md
# Written 2026-12-07, not run yet (no GPU time that session).
set -u
out=$(realpath -m "${1:?usage: $0 OUT PART}"); part=${2:?usage: $0 OUT PART}
root=$(pwd); dir="$out/$part"; mkdir -p "$dir"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1 || { echo "the carried wheels did not install"; exit 3; }
export PYTHONPATH=$root:/tmp/site PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.sm,temperature.gpu --format=csv > "$dir/gpu.txt"
date -u > "$dir/date.txt"
git rev-parse HEAD > "$dir/commit.txt" 2>/dev/null
# A results file's suites, run and then judged by issue 54's targets (kernels/report_backward.py).
run_and_report() {
  local file=$1; shift
  timeout 530 python3 -m perfbot run "$@" --variant approximate=all --out "$dir/$file.json" > "$dir/$file-run.txt" 2>&1
  echo "perfbot run: exit $?"; tail -3 "$dir/$file-run.txt"
  python3 -m kernels.report "$dir/$file.json" > "$dir/$file.md" 2> "$dir/$file-report.txt"
  echo "kernels.report: exit $?"; cat "$dir/$file-report.txt"; grep -E "^\*\*|^Misses" "$dir/$file.md"
}
case $part in
  tests)
    timeout 530 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_backward.py tests/test_geglu_backward.py \
      > "$dir/pytest-gpu.txt" 2>&1
    echo "exit $?"; tail -3 "$dir/pytest-gpu.txt" ;;
  suites)
    run_and_report backward --suite backward-a100 --suite backward-models ;;
  generated)
    run_and_report backward-generated --suite backward-generated ;;
  selftest)
    timeout 530 python3 -m perfbot selftest --suite pr --case t5-v1.1-xl --kernel fused --mode backward \
      --checks 40 --levels 1 --gpus 1 --interference-rounds 0 --out "$dir/selftest.json" > "$dir/selftest.txt" 2>&1
    echo "exit $?"; grep -E "A/A|A/B" "$dir/selftest.txt" ;;
  bench)
    timeout 530 python3 experiments/2026-12-07-geglu-backward/bench.py "$dir" > "$dir/bench.txt" 2>&1
    echo "exit $?"; tail -5 "$dir/bench.txt" ;;
  *)
    echo "unknown part $part (tests, suites, generated, selftest, bench)"; exit 2 ;;
esac
