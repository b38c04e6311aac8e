#!/usr/bin/env bash
# On the H200 of the device tool: what cuBLAS runs for gemm, the fused kernel's compiled code
# (erf against tanh), the large and small classes re-tuned (new candidates; the small class again
# after the option-leak fix), the scripts changed since their last GPU run (flush_probe.py,
# tune_geglu.py) and the git paths of an A/B run (an A/A run of the pr suite against the base).
#   git bundle create device-base.bundle main     # here, before the call, with main at the base
#   scripts/gpu-retune-verify.sh OUT_DIR
source "$(dirname "$0")/device-ab-setup.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv \
  | tee "$out/gpu.txt"
timeout 60 python3 scripts/cublas_kernels.py > "$out/cublas-kernels.txt" 2>&1; tail -22 "$out/cublas-kernels.txt"
timeout 60 python3 scripts/epilogue_sass.py --sass-out "$out/sass" > "$out/epilogue-sass.txt" 2>&1; head -30 "$out/epilogue-sass.txt"
cp kernels/tuned_configs.yaml "$out/tuned_configs.yaml"
# Clocks and power every 200 ms while tuning: is the chip held at its power limit?
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv -lms 200 > "$out/clocks-during-tuning.csv" &
monitor=$!
timeout 300 python3 scripts/tune_geglu.py --paths tma --classes large --where one_dot=True,flatten=True,programs_per_sm=None \
  --out "$out/tuned_configs.yaml" > "$out/tune-large.log" 2>&1
grep -E "candidate|best on" "$out/tune-large.log" | cut -c1-200
timeout 150 python3 scripts/tune_geglu.py --paths tma --classes small --where one_dot=True,flatten=True \
  --out "$out/tuned_configs.yaml" > "$out/tune-small.log" 2>&1
grep -E "candidate|best on" "$out/tune-small.log" | cut -c1-200
kill $monitor
timeout 60 python3 scripts/flush_probe.py --samples 10 > "$out/flush-probe.txt" 2>&1; tail -8 "$out/flush-probe.txt"
timeout 120 python3 -m perfbot run --suite pr --kernel fused --against ab-base --out-dir "$out/aa-pr" 2>&1 | tail -6
tar -czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")"
