#!/usr/bin/env bash
# On the H200 (device tool, from the repository root): the README's two-kernel repository
# (make_repo.py), checked on the GPU, run, and A/A'd, families kept apart; then pytest -m gpu.
#   bash experiments/2026-12-02-h200-families/gpu-families.sh "$OUT/f1"
self=$(cd "$(dirname "$0")" && pwd)
source "$self/../2026-12-01-h200-cross-talk/common.sh"
export PATH=/tmp/bin:$PATH
rm -rf /tmp/fam && python3 "$self/make_repo.py" /tmp/fam > "$out/make.txt" 2>&1 || { tail "$out/make.txt"; pack; exit 3; }
cat > /tmp/bin/perfbot <<SCRIPT
#!/usr/bin/env bash
PYTHONPATH=$tree:/tmp/site exec python3 -c 'import sys; from perfbot.cli import perfbot; sys.argv[0] = "perfbot"; perfbot()' "\$@"
SCRIPT
chmod +x /tmp/bin/perfbot
cd /tmp/fam
for cmd in "perfbot suites" "perfbot check" "perfbot run --out $out/run.json" \
           "perfbot run --family rmsnorm --out $out/run-rmsnorm.json" \
           "perfbot ab HEAD --out-dir $out/aa"; do
  echo "\$ $cmd" >> "$out/families.txt"
  start=$SECONDS
  timeout 300 $cmd >> "$out/families.txt" 2>&1; rc=$?
  echo "exit $rc, $((SECONDS - start)) s" >> "$out/families.txt"
done
cd "$tree"
(timeout 260 python3 -m pytest -m gpu -q -p no:cacheprovider) > "$out/pytest-gpu.txt" 2>&1
tail -3 "$out/pytest-gpu.txt"; grep "^exit\|^\\$" "$out/families.txt"; pack
