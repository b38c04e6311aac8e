#!/usr/bin/env bash
# Issue 20: the full-width A/A on one GPU (`perfbot ab HEAD --skip-kernel max-autotune`) under
# thresholds-0.03.yaml (kernels of 0.03-0.08 ms held to 0.5%), then under the repository's.
#   experiments/2026-12-01-h200-short-kernel-gate/gpu-full-width.sh OUT
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../2026-11-30-h200-full-width/common.sh"
aa() {  # NAME TIMEOUT [OPTIONS]
  name=$1 limit=$2 && shift 2
  { time timeout "$limit" perfbot ab HEAD --skip-kernel max-autotune --gpus 1 --out-dir "$out/$name" "$@" ; } \
    > "$out/$name.txt" 2>&1
  head -1 "$out/$name/comment.md"; tail -4 "$out/$name.txt"
  gzip -f "$out/$name"/*.json
}
aa aa-gate-0.03 330 --thresholds "$here/thresholds-0.03.yaml"
aa aa-repo 240
pack
