# Sourced by this folder's scripts on the device tool's GPU machine, from the repository root,
# with $1 = OUT: the carried wheels (.whl, git-ignored) installed under /tmp/site; a repository
# of the tree in /tmp/xt whose main is the tree and whose branch `neighbour` changes two launch
# configs of the TMA path (neighbour.py: issue 28's reproducer); `perfbot` from that main.
set -u
out=$(realpath -m "${1:?usage: $0 OUT_DIR}")
mkdir -p "$out"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tree=$(pwd)
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1 || { echo "the carried wheels did not install"; exit 3; }
export PYTHONPATH=/tmp/site
# The device tool brings back a few files per call: everything is packed into OUT.tgz at the end.
pack() { tar czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")"; }
nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.sm,temperature.gpu --format=csv > "$out/gpus.txt"
# Made afresh every call: a machine still warm from the last call keeps /tmp, and its tree.
rm -rf /tmp/xt /tmp/xt-nb && mkdir /tmp/xt && cp -r pyproject.toml thresholds.yaml kernels perfbot /tmp/xt/
{
  git_=(git -c user.name=perfbot -c user.email=perfbot@localhost)
  (cd /tmp/xt && "${git_[@]}" init -q -b main && "${git_[@]}" add -A && "${git_[@]}" commit -qm main &&
    "${git_[@]}" checkout -qb neighbour && python3 "$here/neighbour.py" kernels &&
    "${git_[@]}" commit -qam "two launch configs of the TMA path" && "${git_[@]}" checkout -q main) ||
    { echo "the reproducer's repository could not be made"; exit 3; }
}
git -C /tmp/xt log --oneline --all > "$out/xt-commits.txt"
mkdir -p /tmp/bin && cat > /tmp/bin/perfbot <<'SCRIPT'
#!/usr/bin/env bash
PYTHONPATH=/tmp/xt:/tmp/site exec python3 -c 'import sys; from perfbot.cli import perfbot; sys.argv[0] = "perfbot"; perfbot()' "$@"
SCRIPT
chmod +x /tmp/bin/perfbot && export PATH=/tmp/bin:$PATH
# Keep the tables, drop the box-drawing lines around them.
tables() { grep -v "^┏\|^┗\|^┡\|^└\|^├\|^━"; }
# One A/B into $out/NAME/ (comment, comparison and both sides' results, gzipped), its output in
# $out/NAME.txt, its headline and wall time printed.
ab() {  # NAME TIMEOUT ARGS...
  local name=$1 limit=$2 && shift 2
  (cd /tmp/xt && { time timeout "$limit" perfbot ab "$@" --out-dir "$out/$name" ; } > "$out/$name.txt" 2>&1)
  echo "$name: $(head -1 "$out/$name/comment.md" 2>/dev/null | cut -c1-150) $(grep real "$out/$name.txt")"
  gzip -f "$out/$name"/*.json 2>/dev/null
}
