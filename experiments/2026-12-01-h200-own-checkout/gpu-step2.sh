#!/usr/bin/env bash
# Issue 29 on the H200: the GPU tests on the code that loads each side from its own checkout, and
# what it must not have changed (issue 28's reproducer and an A/A), then a real src-layout
# repository A/B'd by perfbot alone (no hand-written loader).
#   experiments/2026-12-01-h200-own-checkout/gpu-step2.sh OUT checks  # pytest -m gpu, 3 quick
#                                                  reproducers, 3 quick A/As (perfbot's own tree)
#   experiments/2026-12-01-h200-own-checkout/gpu-step2.sh OUT liger   # out/liger-geglu (carried,
#       made by ../2026-12-01-liger-src-layout/make-repo.sh): 2 A/Bs HEAD~1 HEAD and 2 A/As, suite pr
here=$(cd "$(dirname "$0")" && pwd)
part=${2:?usage: $0 OUT checks|liger}
source "$here/../2026-12-01-h200-cross-talk/common.sh"
case $part in
  checks)
    (cd "$tree" && timeout 220 python3 -m pytest -m gpu -q -p no:cacheprovider) > "$out/pytest-gpu.txt" 2>&1
    tail -3 "$out/pytest-gpu.txt"; pack
    for i in 1 2 3; do ab quick-$i 45 main neighbour --suite quick; done
    for i in 1 2 3; do ab quick-aa-$i 45 main --suite quick; done
    python3 "$here/../2026-12-01-h200-cross-talk/flags.py" --skip fused "$out"/quick-[0-9]*/ > "$out/quick-flags.txt"
    python3 "$here/../2026-12-01-h200-cross-talk/flags.py" "$out"/quick-aa-*/ > "$out/quick-aa-flags.txt"
    tail -6 "$out/quick-flags.txt" "$out/quick-aa-flags.txt"; pack ;;
  liger)
    # A fresh copy of the carried repository: nothing installed, nothing left from a last call.
    rm -rf /tmp/liger && cp -r "$tree/out/liger-geglu" /tmp/liger && git -C /tmp/liger log --oneline > "$out/liger-commits.txt"
    # The run reads this checkout's thresholds.yaml; the repository has none: perfbot's own, untracked.
    cp "$tree/thresholds.yaml" /tmp/liger/
    lab() {  # NAME TIMEOUT ARGS...: as ab, in the Liger repository
      local name=$1 limit=$2 && shift 2
      (cd /tmp/liger && { time timeout "$limit" perfbot ab "$@" --out-dir "$out/$name" ; } > "$out/$name.txt" 2>&1)
      echo "$name: $(head -1 "$out/$name/comment.md" 2>/dev/null | cut -c1-150) $(grep real "$out/$name.txt")"
      gzip -f "$out/$name"/*.json 2>/dev/null
    }
    (cd /tmp/liger && perfbot ab HEAD~1 HEAD --dry-run --suite pr) > "$out/dry-run.txt" 2>&1; echo "dry run: rc $?"
    for i in 1 2; do lab ab-$i 150 HEAD~1 HEAD --suite pr; pack; done
    for i in 1 2; do lab aa-$i 150 HEAD HEAD --suite pr; pack; done ;;
esac
