#!/usr/bin/env bash
# Issue 28 on the H200, on the code that loads each side's Triton kernels anew every four blocks
# (perfbot/loads.py): the issue's figures, in parts that each fit one device call.
#   experiments/2026-12-01-h200-cross-talk/gpu-loads-anew.sh OUT quick   # pytest -m gpu, probe_forget.py,
#                                                       10 quick reproducers, selftests
#   experiments/2026-12-01-h200-cross-talk/gpu-loads-anew.sh OUT full [N..] # the reproducer at full width, full-1 and full-2 unless named
#   experiments/2026-12-01-h200-cross-talk/gpu-loads-anew.sh OUT reproducers # the 10 quick reproducers
#   experiments/2026-12-01-h200-cross-talk/gpu-loads-anew.sh OUT aa N..  # full-width A/As named aa-N
#   experiments/2026-12-01-h200-cross-talk/gpu-loads-anew.sh OUT selftests # pytest -m gpu, the selftests alone
here=$(cd "$(dirname "$0")" && pwd)
part=${2:?usage: $0 OUT quick|full|aa N...}
source "$here/common.sh"
case $part in
  reproducers)  # the 10 quick reproducers alone
    for i in $(seq 1 10); do ab quick-$i 45 main neighbour --suite quick; done
    python3 "$here/flags.py" --skip fused "$out"/quick-*/ > "$out/quick-flags.txt"
    grep -A20 "^rows flagged" "$out/quick-flags.txt"; pack ;;
  quick)
    (cd "$tree" && timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider) > "$out/pytest-gpu.txt" 2>&1
    tail -2 "$out/pytest-gpu.txt"; pack
    (cd /tmp/xt && PYTHONPATH=/tmp/xt:/tmp/site timeout 60 python3 "$here/probe_forget.py" kernels) > "$out/probe-forget.txt" 2>&1
    cat "$out/probe-forget.txt"
    for i in $(seq 1 10); do ab quick-$i 45 main neighbour --suite quick; done
    python3 "$here/flags.py" --skip fused "$out"/quick-*/ > "$out/quick-flags.txt"
    grep -A20 "^rows flagged" "$out/quick-flags.txt"; pack
    ;&  # on to the selftests
  selftests)
    [ "$part" = selftests ] && { (cd "$tree" && timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider) \
      > "$out/pytest-gpu.txt" 2>&1; tail -2 "$out/pytest-gpu.txt"; pack; }
    for name in default decode; do  # runs/q2: 150 s each, at the 400 interference rounds of then
      extra=(); [ $name = decode ] && extra=(--suite decode --case gemma-7b-m16 --skip-kernel max-autotune)
      (cd /tmp/xt && { time timeout 300 perfbot selftest --checks 40 --levels 0.5 --gpus 1 "${extra[@]}" \
        --out "$out/selftest-$name.json" ; } 2>&1 | tables > "$out/selftest-$name.txt")
      grep -v "^│ \(fused\|eager\|gemm\|compiled\|copy\|fused-pointer\) on" "$out/selftest-$name.txt"; pack
    done ;;
  full)
    shift 2; for i in ${@:-1 2}; do ab full-$i 290 main neighbour --skip-kernel max-autotune --gpus 1; pack; done
    python3 "$here/flags.py" --skip fused "$out"/full-*/ > "$out/full-flags.txt"
    grep -v "^  fused on" "$out/full-flags.txt" | tail -12; pack ;;
  aa)
    shift 2
    # runs/a2 ran with 146 s here (sed on the device), too short: it cut off three A/As.
    for n in "$@"; do ab aa-$n 200 main --skip-kernel max-autotune --gpus 1; pack; done
    python3 "$here/flags.py" "$out"/aa-*/ > "$out/aa-flags.txt"; tail -8 "$out/aa-flags.txt"; pack ;;
esac
