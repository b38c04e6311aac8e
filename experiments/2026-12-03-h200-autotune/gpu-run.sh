#!/usr/bin/env bash
# Issue 50's runs on the device tool's H200, from perfbot's root, its wheels carried in .whl/
# (pydantic, ruptures, github3.py and what they need), one part a call (each fits one call's 600 s):
#   experiments/2026-12-03-h200-autotune/gpu-run.sh OUT tests      # python -m pytest -m gpu
#   experiments/2026-12-03-h200-autotune/gpu-run.sh OUT example    # examples/autotuned: check, run, show
#   experiments/2026-12-03-h200-autotune/gpu-run.sh OUT aa N       # N A/As of examples/autotuned
#   experiments/2026-12-03-h200-autotune/gpu-run.sh OUT config     # a head that only adds a config
#   experiments/2026-12-03-h200-autotune/gpu-run.sh OUT selftest   # detection on an autotuned row and on GeGLU
# Each part's files go under OUT/PART and come back as OUT/PART.tgz (the tool returns 8 files).
set -u
out=$(realpath -m "${1:?usage: $0 OUT PART [N]}"); part=${2:?usage: $0 OUT PART [N]}; count=${3:-10}
root=$(pwd); mkdir -p "$out/$part"; dir="$out/$part"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1 || { echo "the carried wheels did not install"; exit 3; }
export PYTHONPATH=$root:/tmp/site PYTHONUNBUFFERED=1
git -C "$root" log -1 --format=%H > "$dir/commit.txt" 2>/dev/null
git -C "$root" status --short > "$dir/status.txt" 2>/dev/null
nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.sm,temperature.gpu --format=csv > "$dir/gpu.txt"
# The example as a repository of its own: a base commit, and a head commit that `edit` makes.
example() {  # example REPO [SED-EXPRESSION FILE]
  rm -rf "$1" && cp -r "$root/examples/autotuned" "$1" && git -C "$1" init -q -b main \
    && git -C "$1" add -A && git -C "$1" -c user.name=p -c user.email=p@p commit -qm base || exit 3
  if [ $# -gt 2 ]; then sed -i "$2" "$1/$3"; else echo head > "$1/NOTES"; fi
  git -C "$1" add -A && git -C "$1" -c user.name=p -c user.email=p@p commit -qm head
}
case $part in
  tests)
    timeout 560 python3 -m pytest -m gpu -q -p no:cacheprovider > "$dir/pytest-gpu.txt" 2>&1
    tail -3 "$dir/pytest-gpu.txt" ;;
  example)
    timeout 560 bash examples/autotuned/results/measure.sh "$dir" > "$dir/measure.txt" 2>&1
    tail -3 "$dir/run.txt" ;;
  aa)
    example /tmp/aa-repo
    for i in $(seq 1 "$count"); do
      ( cd /tmp/aa-repo && { time timeout 150 python3 -m perfbot ab HEAD~1 HEAD --time-budget 40 \
          --out-dir "$dir/aa-$i" ; } > "$dir/aa-$i.txt" 2>&1; echo "exit $?" >> "$dir/aa-$i.txt" )
      head -1 "$dir/aa-$i/comment.md" 2>/dev/null; tail -1 "$dir/aa-$i.txt"
    done ;;
  config)
    # The base's GELU tunes over BLOCK_SIZE 64 and 128 alone; the head adds 1024.
    example /tmp/config-repo 's/for block in (64, 128, 256, 512, 1024)/for block in (64, 128)/' tunedkernels/gelu.py
    sed -i 's/for block in (64, 128)/for block in (64, 128, 1024)/' /tmp/config-repo/tunedkernels/gelu.py
    git -C /tmp/config-repo add -A && git -C /tmp/config-repo -c user.name=p -c user.email=p@p commit -qm "gelu: a 1024 block"
    ( cd /tmp/config-repo && git log --format='%h %s' > "$dir/log.txt" && timeout 500 python3 -m perfbot ab HEAD~1 HEAD \
        --family gelu --time-budget 60 --out-dir "$dir/ab" > "$dir/ab.txt" 2>&1; echo "exit $?" >> "$dir/ab.txt" )
    head -1 "$dir/ab/comment.md"; tail -1 "$dir/ab.txt" ;;
  selftest)
    ( cd examples/autotuned && timeout 270 python3 -m perfbot selftest --family gelu --suite pr --case 4096x4096 \
        --checks 20 --levels 0.5,1 --interference-rounds 0 --out "$dir/example.json" > "$dir/example.txt" 2>&1;
      echo "exit $?" >> "$dir/example.txt" )
    timeout 270 python3 -m perfbot selftest --checks 20 --levels 0.5 --interference-rounds 0 \
      --out "$dir/geglu.json" > "$dir/geglu.txt" 2>&1; echo "exit $?" >> "$dir/geglu.txt"
    tail -4 "$dir/example.txt" "$dir/geglu.txt" ;;
  *) echo "unknown part $part"; exit 2 ;;
esac
tar czf "$out/$part.tgz" -C "$out" "$part"
