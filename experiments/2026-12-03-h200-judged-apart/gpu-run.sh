#!/usr/bin/env bash
# Issue 52's runs on the device tool's H200, from perfbot's root, its wheels carried in .whl/:
#   experiments/2026-12-03-h200-judged-apart/gpu-run.sh OUT tests     # python -m pytest -m gpu
#   experiments/2026-12-03-h200-judged-apart/gpu-run.sh OUT cost      # the fresh-input check's share of a run
# Written 2026-12-04, not run yet (no GPU time that session), for issue 52's targets on the final code:
#   ... OUT exploits    # perfbot selftest --exploits: every exploit caught?
#   ... OUT selftest    # A/A and 0.5% on the default benchmark and a 75 us decode kernel
#   ... OUT aa          # one full-width A/A, as the PR check takes it
#   ... OUT overhead    # an A/A of fixed rounds, before issue 52 (56b242e) against now, in turns
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
    # TESTS: the modules or node ids to run, all of them by default (more than 575 s on an H100,
    # where the fused kernel autotunes in every process: split it over two calls there).
    timeout 570 python3 -m pytest -m gpu -q -p no:cacheprovider ${TESTS:-} > "$dir/pytest-gpu.txt" 2>&1
    rc=$?; tail -3 "$dir/pytest-gpu.txt"; exit $rc ;;
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
    # Wall time of the same fixed work before issue 52's worker process and fresh-input check
    # (56b242e) and now: an A/A as the PR check takes it (`ab`, every implementation but
    # max-autotune), each pair held to 48 rounds (--samples = --max-samples: no pair stops early,
    # none runs on), over SUITES. Each a fresh process, as a user's run is. The first turn warms
    # Triton's and Inductor's caches (the kernels did not change) and is not counted. TURNS: the
    # sides in order after it.
    git config --global --add safe.directory '*'
    before=/tmp/perfbot-before; git worktree prune; [ -d $before ] || git worktree add -q --detach $before 56b242e
    n=0
    for side in warm ${TURNS:-before now now before before now}; do
      where=$root; [ $side = before ] && where=$before
      started=$EPOCHREALTIME
      (cd "$where" && PYTHONPATH=$where:/tmp/site timeout ${RUN_LIMIT_S:-280} python3 -m perfbot ab HEAD HEAD \
         ${SUITES:---suite pr --suite decode} --skip-kernel max-autotune --gpus 1 --samples 48 --max-samples 48 \
         --out-dir "/tmp/$side-$n" > "/tmp/$side-$n.txt" 2>&1)
      rc=$?; ended=$EPOCHREALTIME
      echo "$n $side exit $rc $(python3 -c "print(f'{$ended - $started:.1f}')") s" | tee -a "$dir/walls.txt"
      [ $rc = 0 ] || tail -3 "/tmp/$side-$n.txt" | tee -a "$dir/walls.txt"
      grep -E "unchanged|slowdown" "/tmp/$side-$n.txt" | tail -1 >> "$dir/walls.txt"
      n=$((n + 1))
    done
    python3 - "$dir/walls.txt" <<'PY' | tee -a "$dir/walls.txt"
import statistics, sys
walls = {"before": [], "now": []}
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) == 6 and parts[1] in walls and parts[3] in ("0", "1"):  # an A/A row may flag by chance
        walls[parts[1]].append(float(parts[4]))
if walls["before"] and walls["now"]:
    before, now = statistics.median(walls["before"]), statistics.median(walls["now"])
    print(f"median before {before:.1f} s, now {now:.1f} s: now/before {now / before:.3f}")
PY
    ;;
esac
