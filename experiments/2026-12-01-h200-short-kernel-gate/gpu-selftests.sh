#!/usr/bin/env bash
# Issue 20, the short decode kernel: `perfbot selftest` after both sides of a level carry the
# sleep kernel (so 0.5% can be injected into a 75 us kernel), under the repository's thresholds
# (kernels under 0.08 ms held to +1%/+2%) and under thresholds-0.03.yaml (0.5% down to 0.03 ms);
# and the default benchmark's selftest on the same code.
#   experiments/2026-12-01-h200-short-kernel-gate/gpu-selftests.sh OUT
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../2026-11-30-h200-full-width/common.sh"
decode() {  # NAME THRESHOLDS LEVELS CHECKS TIMEOUT
  { time timeout "$5" perfbot selftest --suite decode --case gemma-7b-m16 --checks "$4" --levels "$3" --gpus 1 \
      --thresholds "$2" --out "$out/$1.json" ; } 2>&1 | tables > "$out/$1.txt"
  cat "$out/$1.txt"
}
decode decode-gate-0.03 "$here/thresholds-0.03.yaml" 0.5 100 240
decode decode-repo /tmp/aa/thresholds.yaml 0.5,1,2 60 90
{ time timeout 120 perfbot selftest --checks 100 --levels 0.5 --gpus 1 --out "$out/selftest-default.json" ; } 2>&1 \
  | tables > "$out/selftest-default.txt"
cat "$out/selftest-default.txt"
pack
