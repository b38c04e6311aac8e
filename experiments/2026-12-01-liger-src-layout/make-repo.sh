#!/bin/sh
# Rebuild the test repository: Liger-Kernel's tree at the parent of 07804e4 ("Update swiglu and
# geglu forward: zeros_like -> empty_like (#217)") plus a perfbot subject, then a second commit
# with that commit's src/liger_kernel/ops/geglu.py only (the two commits differ in that one file).
# Usage: make-repo.sh MIRROR_GIT_DIR DEST [SUBJECT_DIR]
#   MIRROR_GIT_DIR: a clone (bare or not) of https://github.com/linkedin/Liger-Kernel
#   SUBJECT_DIR:    the folder holding the subject's __init__.py (default: subject-example beside this script)
# With FULL=1 the second commit takes every file 07804e4 changed (geglu.py and swiglu.py).
set -eu
# Fixed names and dates: the same commit ids on every rebuild.
export GIT_AUTHOR_DATE=2026-12-01T00:00:00Z GIT_COMMITTER_DATE=2026-12-01T00:00:00Z
MIRROR=$1 DEST=$2
SUBJECT=${3:-$(dirname "$0")/subject-example}
HEAD_COMMIT=07804e43a5e6e019a829c37c9cb022a4c2aa4bed
BASE_COMMIT=$(git --git-dir="$MIRROR" rev-parse "$HEAD_COMMIT~1")   # 6a75ddca "Update README.md"
TRITON_COMMIT=7c56a5e40f7fd928dfd5c72902d5def0097db73a               # as perfbot's pyproject.toml

test ! -e "$DEST" || { echo "$DEST exists" >&2; exit 2; }
mkdir -p "$DEST"
# File by file: git archive prints an error for the large test blobs the mirror leaves out.
git --git-dir="$MIRROR" ls-tree -r --name-only "$BASE_COMMIT" -- pyproject.toml README.md LICENSE NOTICE src |
while read -r f; do mkdir -p "$DEST/$(dirname "$f")"; git --git-dir="$MIRROR" show "$BASE_COMMIT:$f" > "$DEST/$f"; done
mkdir "$DEST/perfbot_bench"
cp "$SUBJECT/__init__.py" "$DEST/perfbot_bench/__init__.py"
cat >> "$DEST/pyproject.toml" <<TOML

[tool.perfbot]
triton-commit = "$TRITON_COMMIT"
kernels = "perfbot_bench"
TOML
printf '%s\n' '__pycache__/' '*.egg-info/' 'build/' 'perfbot-ab/' > "$DEST/.gitignore"
cd "$DEST"
git init -q -b main
git add -A
git -c user.name=perfbot-try -c user.email=try@example.invalid commit -qm "Liger-Kernel $BASE_COMMIT + perfbot subject"
if [ "${FULL:-0}" = 1 ]; then files=$(git --git-dir="$MIRROR" diff --name-only "$BASE_COMMIT" "$HEAD_COMMIT")
else files=src/liger_kernel/ops/geglu.py; fi
for f in $files; do git --git-dir="$MIRROR" show "$HEAD_COMMIT:$f" > "$f"; done
git add -A
git -c user.name=perfbot-try -c user.email=try@example.invalid commit -qm "Liger-Kernel $HEAD_COMMIT: $files (zeros_like -> empty_like)"
git log --oneline
git diff --stat HEAD~1 HEAD
