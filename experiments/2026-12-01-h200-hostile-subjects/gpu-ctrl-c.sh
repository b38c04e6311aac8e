#!/usr/bin/env bash
# Ctrl-C (SIGINT to the process group, as a terminal sends it) 20 s into two long commands of
# this repository's kernels on the H200 (interrupt.py): `perfbot run --suite all` and
# `perfbot ab HEAD`: the exit code, the last lines said, and any perfbot process left.
#   experiments/2026-12-01-h200-hostile-subjects/gpu-ctrl-c.sh OUT
self=$(cd "$(dirname "$0")" && pwd)  # common.sh sets its own $here
source "$self/../2026-12-01-h200-cross-talk/common.sh"
interrupt() {  # NAME ARGS...
  local name=$1 && shift
  (cd /tmp/xt && python3 "$self/interrupt.py" 20 perfbot "$@" > "$out/$name.out" 2> "$out/$name.err"
    echo "rc $?" > "$out/$name.rc")
  sleep 2
  pgrep -fa "perfbot" | grep -v pgrep > "$out/$name.left" || true
  echo "$name: $(cat "$out/$name.rc"); stderr ends: $(grep . "$out/$name.err" | tail -2 | cut -c1-200 | tr '\n' '|'); processes left: $(grep -c . "$out/$name.left")"
}
interrupt run run --suite all --skip-kernel max-autotune
interrupt ab ab HEAD --skip-kernel max-autotune
pack
