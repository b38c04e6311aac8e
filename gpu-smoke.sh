#!/usr/bin/env bash
# Smoke run on the GPU machine (PyTorch and Triton preinstalled, no network).
set -x
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
python3 -m perfbot env
python3 -m pytest -q -m gpu tests/ -x 2>&1 | tail -15
python3 -m perfbot run --suite pr --samples 10 --out $OUT/pr.json
