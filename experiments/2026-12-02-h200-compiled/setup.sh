# Sourced by this folder's scripts on the device tool's GPU machine, from the repository root,
# with $1 = OUT: the carried wheels (.whl, git-ignored) installed under /tmp/site; a repository
# of the tree in /tmp/ct whose main is the tree and whose branches `block-k` and `spills` are
# branches.py's; `perfbot` from that main. `ab NAME LIMIT ARGS...` runs one A/B in /tmp/ct.
set -u
out=$(realpath -m "${1:?usage: $0 OUT_DIR}")
mkdir -p "$out"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tree=$(pwd)
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > /dev/null 2>&1 || { echo "the carried wheels did not install"; exit 3; }
export PYTHONPATH=/tmp/site
pack() { tar czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")"; }
nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.sm,temperature.gpu --format=csv > "$out/gpus.txt"
git_=(git -c user.name=perfbot -c user.email=perfbot@localhost)
# A repository of a tree ($1) in $2, main only.
repo() {
  rm -rf "$2" && mkdir "$2" && cp -r "$1"/pyproject.toml "$1"/thresholds.yaml "$1"/kernels "$1"/perfbot "$2"/ &&
    (cd "$2" && "${git_[@]}" init -q -b main && "${git_[@]}" add -A && "${git_[@]}" commit -qm main)
}
repo "$tree" /tmp/ct || { echo "the repository could not be made"; exit 3; }
for branch in block-k spills; do
  (cd /tmp/ct && "${git_[@]}" checkout -qb "$branch" main && python3 "$here/branches.py" kernels "$branch" &&
    "${git_[@]}" commit -qam "$branch" && "${git_[@]}" checkout -q main) || { echo "branch $branch failed"; exit 3; }
done
git -C /tmp/ct log --oneline --all > "$out/ct-commits.txt"
mkdir -p /tmp/bin
# perfbot from the tree $1 (default /tmp/ct): `use_perfbot DIR`.
use_perfbot() {
  cat > /tmp/bin/perfbot <<SCRIPT
#!/usr/bin/env bash
PYTHONPATH=${1:-/tmp/ct}:/tmp/site exec python3 -c 'import sys; from perfbot.cli import perfbot; sys.argv[0] = "perfbot"; perfbot()' "\$@"
SCRIPT
  chmod +x /tmp/bin/perfbot
}
use_perfbot && export PATH=/tmp/bin:$PATH
# One A/B in repository $repo_dir (default /tmp/ct) into $out/NAME/, its output in $out/NAME.txt.
ab() {  # NAME TIMEOUT ARGS...
  local name=$1 limit=$2 && shift 2
  (cd "${repo_dir:-/tmp/ct}" && { time timeout "$limit" perfbot ab "$@" --out-dir "$out/$name" ; } > "$out/$name.txt" 2>&1)
  echo "$name: $(head -1 "$out/$name/comment.md" 2>/dev/null | cut -c1-150) $(grep real "$out/$name.txt")"
  gzip -f "$out/$name"/*.json 2>/dev/null
}
