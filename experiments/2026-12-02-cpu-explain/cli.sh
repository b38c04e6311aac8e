#!/bin/bash
# `perfbot explain` as a CPU CI job would run it, timed: one decode case (the implementations
# under test), then the same case with every implementation the suite lists (the torch ones run
# on the CPU, where torch.compile writes C++, not Triton). Triton's cache starts empty.
# Run from the repository's root: bash experiments/2026-12-02-cpu-explain/cli.sh OUT_DIR
set -u
out=${1:?output folder}
mkdir -p "$out"
export TRITON_CACHE_DIR=$(mktemp -d) PYTHONPATH=.
run() {
    local name=$1; shift
    local start=$SECONDS
    env -u TRITON_INTERPRET "${PYTHON:-python}" -m perfbot explain "$@" >"$out/$name.txt" 2>"$out/$name.err"
    echo "exit $? after $((SECONDS - start)) s: perfbot explain $*" | tee -a "$out/cli.txt"
}
git log -1 --format='commit %H %cI' | tee "$out/cli.txt"
date -u '+%F %H:%M UTC' | tee -a "$out/cli.txt"
run decode HEAD --suite decode --case gemma-7b-m16 --json "$out/decode.json" --overwrite
run decode-again HEAD --suite decode --case gemma-7b-m16
run decode-all HEAD --suite decode --case gemma-7b-m16 --kernel all --json "$out/decode-all.json" --overwrite
