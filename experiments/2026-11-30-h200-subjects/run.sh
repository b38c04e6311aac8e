#!/usr/bin/env bash
# Both subjects through the subject API on one H200 (the device tool's machine, no network):
# the GPU tests of the run path, `perfbot check` and `perfbot run` of each subject, and, on the
# RMSNorm example, `perfbot ab` of two identical revisions, `perfbot sample` and `perfbot selftest`.
#   experiments/2026-11-30-h200-subjects/run.sh OUT_DIR [PART...]   (.whl/ holds pydantic's wheels)
# PART: tests, geglu, rmsnorm (default: all three).
set -uo pipefail
out=$(realpath -m "${1:?usage: $0 OUT_DIR [tests] [geglu] [rmsnorm]}"); mkdir -p "$out"; shift
parts=" ${*:-tests geglu rmsnorm} "
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --find-links .whl pydantic >/dev/null 2>&1 || { echo "pydantic install failed"; exit 3; }
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || { echo "install failed"; exit 3; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee "$out/gpu.txt"
step() { echo "== $* ($(date -u +%H:%M:%S))"; }

if [[ $parts == *" tests "* ]]; then
step "GPU tests of the run path"
python3 -m pytest -q -m gpu tests/test_run_gpu.py --tb=short -p no:logging 2>&1 | tail -5 | tee "$out/gpu-tests.txt"
fi

if [[ $parts == *" geglu "* ]]; then
step "GeGLU: check and run, pr suite, both GELUs"
python3 -m perfbot check --suite pr --variant approximate=all > "$out/geglu-check.txt" 2>&1; echo "check exit $?" | tee -a "$out/geglu-check.txt"
python3 -m perfbot run --suite pr --variant approximate=all --out "$out/geglu-pr.json" > "$out/geglu-pr.txt" 2>&1; echo "run exit $?" | tee -a "$out/geglu-pr.txt"
fi

[[ $parts == *" rmsnorm "* ]] || exit 0
ex=examples/rmsnorm
step "RMSNorm: check and run, pr and wide suites, both offsets"
python3 -m perfbot check --project $ex --suite pr --suite wide --variant offset=all > "$out/rmsnorm-check.txt" 2>&1; echo "check exit $?" | tee -a "$out/rmsnorm-check.txt"
python3 -m perfbot run --project $ex --suite pr --suite wide --variant offset=all --out "$out/rmsnorm.json" > "$out/rmsnorm.txt" 2>&1; echo "run exit $?" | tee -a "$out/rmsnorm.txt"

step "RMSNorm: ab of two identical revisions (a repository made of the example)"
repo=$(mktemp -d)/rmsnorm; cp -r $ex "$repo"; rm -rf "$repo/results"
git -C "$repo" init -q && git -C "$repo" add -A && git -C "$repo" -c user.name=p -c user.email=p@p commit -qm example
(cd "$repo" && python3 -m perfbot ab HEAD --suite pr --kernel triton --kernel torch --out-dir "$out/rmsnorm-ab") > "$out/rmsnorm-ab.txt" 2>&1; echo "ab exit $?" | tee -a "$out/rmsnorm-ab.txt"

step "RMSNorm: sample and selftest"
python3 -m perfbot sample --project $ex --suite pr --case llama-3-8b --variant offset=1 > "$out/rmsnorm-sample.txt" 2>&1; echo "sample exit $?" | tee -a "$out/rmsnorm-sample.txt"
python3 -m perfbot selftest --project $ex --rounds 20 --out "$out/rmsnorm-selftest.json" > "$out/rmsnorm-selftest.txt" 2>&1; echo "selftest exit $?" | tee -a "$out/rmsnorm-selftest.txt"
step done
