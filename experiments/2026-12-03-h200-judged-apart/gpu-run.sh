#!/usr/bin/env bash
# Issue 52's runs on the device tool's H200, from perfbot's root, its wheels carried in .whl/:
#   experiments/2026-12-03-h200-judged-apart/gpu-run.sh OUT tests     # python -m pytest -m gpu
#   experiments/2026-12-03-h200-judged-apart/gpu-run.sh OUT cost      # the fresh-input check's share of a run
# Written 2026-12-04, not run yet (no GPU time that session), for issue 52's targets on the final code:
#   ... OUT exploits    # perfbot selftest --exploits: every exploit caught?
#   ... OUT selftest    # A/A and 0.5% on the default benchmark and a 75 us decode kernel
#   ... OUT aa          # one full-width A/A, as the PR check takes it
#   ... OUT overhead    # perfbot run --suite pr, before issue 52 (56b242e) against now, alternated
set -u
out=$(realpath -m "${1:?usage: $0 OUT PART}"); part=${2:?usage: $0 OUT PART}
root=$(pwd); dir="$out/$part"; mkdir -p "$dir"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1 || { echo "the carried wheels did not install"; exit 3; }
export PYTHONPATH=$root:/tmp/site PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.sm,temperature.gpu --format=csv > "$dir/gpu.txt"
date -u > "$dir/date.txt"
case $part in
  tests)
    timeout 570 python3 -m pytest -m gpu -q -p no:cacheprovider > "$dir/pytest-gpu.txt" 2>&1
    tail -3 "$dir/pytest-gpu.txt" ;;
  cost)
    # What the fresh-input check costs a run: `perfbot run --suite pr`, in one process whose
    # runner.recheck_fresh is wrapped by a clock; its share of the run's wall time.
    for i in 1 2; do
      timeout 280 python3 - "$dir/run-$i.json" > "$dir/cost-$i.txt" 2>&1 <<'PY'
import sys, time
from perfbot.measuring import runner
spent, calls, wrapped = [0.0], [0], runner.recheck_fresh
def timed(*args, **kwargs):
    started = time.monotonic()
    try:
        return wrapped(*args, **kwargs)
    finally:
        spent[0] += time.monotonic() - started
        calls[0] += 1
runner.recheck_fresh = timed
from perfbot.cli import perfbot
started = time.monotonic()
try:
    perfbot.main(["run", "--suite", "pr", "--out", sys.argv[1]], standalone_mode=False)
finally:
    wall = time.monotonic() - started
    print(f"wall {wall:.1f} s; fresh-input check {spent[0]:.2f} s in {calls[0]} cases ({100 * spent[0] / wall:.1f}%)")
PY
      tail -1 "$dir/cost-$i.txt"
    done ;;
  exploits)
    timeout 570 python3 -m perfbot selftest --exploits --samples 30 --out "$dir/exploits.json" > "$dir/exploits.txt" 2>&1
    echo "exit $?"; tail -2 "$dir/exploits.txt" ;;
  selftest)
    timeout 280 python3 -m perfbot selftest --checks 40 --levels 0.5 --gpus 1 --interference-rounds 0 \
      --out "$dir/default.json" > "$dir/default.txt" 2>&1
    timeout 280 python3 -m perfbot selftest --checks 40 --levels 0.5 --gpus 1 --interference-rounds 0 \
      --suite decode --case gemma-7b-m16 --kernel fused --out "$dir/decode.json" > "$dir/decode.txt" 2>&1
    grep -E "A/A|A/B" "$dir/default.txt" "$dir/decode.txt" ;;
  aa)
    git config --global --add safe.directory "$root" 2>/dev/null
    { time timeout 560 python3 -m perfbot ab HEAD HEAD --skip-kernel max-autotune --gpus 1 \
        --out-dir "$dir/ab" ; } > "$dir/aa.txt" 2>&1
    echo "exit $?"; grep -E "real|regression|unchanged|flagged" "$dir/aa.txt" | head ;;
  overhead)
    # Wall time of the same run before issue 52's processes and checks (56b242e) and now, in
    # turns; each a fresh process, as a user's run is.
    before=/tmp/perfbot-before; [ -d $before ] || git worktree add -q --detach $before 56b242e
    for turn in 1 2 3; do
      for side in before now; do
        where=$root; [ $side = before ] && where=$before
        started=$(date +%s.%N)
        (cd "$where" && PYTHONPATH=$where:/tmp/site timeout 280 python3 -m perfbot run --suite pr --samples 30 \
           > "$dir/$side-$turn.txt" 2>&1)
        echo "$side $turn exit $? $(echo "$(date +%s.%N) - $started" | bc) s" | tee -a "$dir/walls.txt"
      done
    done ;;
esac
