# Sourced by the scripts of this folder, on the device tool's GPU machine, from the repository
# root: pydantic from the carried wheels, a fresh one-commit git repository of the tree in
# /tmp/aa (so that `perfbot ab HEAD` measures the tree against itself: an A/A), and `perfbot`.
set -u
out=${1:?usage: $0 OUT_DIR}
mkdir -p "$out"
# The device tool brings back a few files per call: everything is packed into OUT.tgz at the end.
pack() { tar czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")"; }
python3 -m pip install -q --no-index --find-links .whl pydantic > /dev/null 2>&1
nvidia-smi --query-gpu=index,name,driver_version,power.limit --format=csv > "$out/gpus.txt"
rm -rf /tmp/aa && mkdir /tmp/aa && cp -r pyproject.toml thresholds.yaml kernels perfbot /tmp/aa/
(cd /tmp/aa && git init -q && git add -A && git -c user.name=perfbot -c user.email=perfbot@localhost commit -qm "A/A")
mkdir -p /tmp/bin && cat > /tmp/bin/perfbot <<'SCRIPT'
#!/usr/bin/env bash
PYTHONPATH=/tmp/aa exec python3 -c 'import sys; from perfbot.cli import perfbot; sys.argv[0] = "perfbot"; perfbot()' "$@"
SCRIPT
chmod +x /tmp/bin/perfbot && export PATH=/tmp/bin:$PATH
# Keep the tables, drop the box-drawing lines around them.
tables() { grep -v "^┏\|^┗\|^┡\|^└\|^├\|^━"; }
cd /tmp/aa
