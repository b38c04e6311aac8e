#!/usr/bin/env bash
# Issue 31 on the H200: `python -m pytest -m gpu` on the tree, then a small subject that quits,
# lies or is interrupted, checked and timed on the GPU (make_subject.py).
#   experiments/2026-12-01-h200-hostile-subjects/gpu-hostile.sh OUT
self=$(cd "$(dirname "$0")" && pwd)  # common.sh sets its own $here
source "$self/../2026-12-01-h200-cross-talk/common.sh"
(cd "$tree" && timeout 300 python3 -m pytest -m gpu -q -p no:cacheprovider) > "$out/pytest-gpu.txt" 2>&1
tail -3 "$out/pytest-gpu.txt"; pack
cp thresholds.yaml /tmp/thresholds.yaml
one() {  # NAME BEHAVIOUR COMMAND...: the command's stderr, stdout and exit code in $out/NAME.txt
  local name=$1 behaviour=$2 && shift 2
  rm -rf "/tmp/hs-$name" && mkdir -p "/tmp/hs-$name" && python3 "$self/make_subject.py" "/tmp/hs-$name" "$behaviour"
  cp /tmp/thresholds.yaml "/tmp/hs-$name/"
  (cd "/tmp/hs-$name" && PYTHONPATH=$tree:/tmp/site "$@" > "$out/$name.out" 2> "$out/$name.err"; echo "rc $?" > "$out/$name.rc")
  echo "$name: $(cat "$out/$name.rc"); stderr: $(grep -c . "$out/$name.err") line(s): $(grep . "$out/$name.err" | tail -1 | cut -c1-200)"
}
pb=(python3 -m perfbot)
one fine-check fine "${pb[@]}" check --device cuda
one fine-run fine "${pb[@]}" run --suite quick
one quits-check quits "${pb[@]}" check --device cuda
one quits-run quits "${pb[@]}" run --suite quick
one nan-check nan "${pb[@]}" check --device cuda
one nan-run nan "${pb[@]}" run --suite quick
# Ctrl-C 30 s into a long run of this repository's own suite, in the middle of timing it.
(cd /tmp/xt && timeout -s INT 30 perfbot run --suite pr > "$out/ctrl-c.out" 2> "$out/ctrl-c.err"; echo "rc $?" > "$out/ctrl-c.rc")
echo "ctrl-c: $(cat "$out/ctrl-c.rc"); stderr: $(grep . "$out/ctrl-c.err" | tail -2 | cut -c1-200)"
pgrep -fa "perfbot" | grep -v pgrep > "$out/ctrl-c.left" || true; echo "processes left: $(grep -c . "$out/ctrl-c.left")"
pack
