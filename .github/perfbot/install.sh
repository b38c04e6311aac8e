#!/usr/bin/env bash
# Install perfbot into .venv for a job: `install.sh core` (compare, comment, baseline, issues: no
# PyTorch; the github extra, for the jobs that post) or `install.sh gpu` (the measuring extra
# alone, then the measured project with its own dependencies: no github3.py on the GPU runner);
# `install.sh check` only checks PERFBOT_SOURCE's form and installs nothing; `install.sh verify`
# also checks that its commit is one of the default branch of its repository, and installs
# nothing (docs/github.md, "Which extra each job installs").
# core is what the jobs that hold write tokens install: every distribution from the lock beside
# this script (requirements-core.txt), each pinned by version and hash, wheels only, and then
# perfbot itself built with the locked setuptools, adding nothing (docs/github.md, "The lock of
# the jobs that post").
# Where this repository is perfbot itself, PERFBOT_SOURCE is unset or "." and perfbot is installed
# from the checkout. Any other repository sets the repository variable PERFBOT_SOURCE to where pip
# finds perfbot, pinned to a commit: git+https://github.com/OWNER/REPO@<40-hex commit>.
set -euo pipefail
kind=${1:?usage: .github/perfbot/install.sh core|gpu|check|verify}
source=${PERFBOT_SOURCE:-.}
lock="$(dirname "${BASH_SOURCE[0]}")/requirements-core.txt"
case "$kind" in
  core) extra="[github]" ;;  # as the lock holds it
  gpu) extra="[gpu]" ;;
  check | verify) extra= ;;
  *) echo "install.sh: core, gpu, check or verify, got $kind" >&2; exit 2 ;;
esac
# The GPU runner runs whatever this names, so it must name one reviewed commit and nothing else:
# exactly git+https://github.com/OWNER/REPO@<40 lower-case hex digits>, the whole value. No branch
# or tag (they move), no fragment or query (pip reads "#egg=" and "@" in them), no other host or
# scheme, no file. OWNER as GitHub spells one (1 to 39 letters, digits and single inner hyphens),
# REPO 1 to 100 letters, digits, '.', '_' or '-', neither "." nor "..". ($ ends the string here:
# a trailing newline or space is refused too.)
pinned='^git\+https://github\.com/([A-Za-z0-9]+(-[A-Za-z0-9]+)*)/([A-Za-z0-9._-]{1,100})@[0-9a-f]{40}$'
if [ "$source" != . ]; then
  if [[ ! "$source" =~ $pinned ]] || [ "${#BASH_REMATCH[1]}" -gt 39 ] || [[ "${BASH_REMATCH[3]}" =~ ^\.\.?$ ]]; then
    # The value is not echoed: it would be read as workflow commands.
    echo "::error::PERFBOT_SOURCE must be perfbot pinned to a full commit, exactly git+https://github.com/OWNER/REPO@<40 lower-case hex digits>" >&2
    exit 2
  fi
fi
if [ "$source" = . ] && ! python3 -c 'import sys, tomllib; sys.exit(tomllib.load(open("pyproject.toml", "rb"))["project"]["name"] != "perfbot")' 2>/dev/null; then
  echo "::error::this repository is not perfbot: set the repository variable PERFBOT_SOURCE to perfbot pinned at a commit (git+https://github.com/OWNER/REPO@SHA)" >&2
  exit 2
fi
if [ "$kind" = verify ] && [ "$source" != . ]; then
  # GitHub serves any commit of a repository's forks under the repository's own address, so a
  # well-formed pin can still name code no one reviewed there: the commit must be one of the
  # default branch's (an ancestor of its tip, or the tip). Only that branch's commits are fetched,
  # without trees or files; a commit outside it is not fetched (GIT_NO_LAZY_FETCH).
  [[ "$source" =~ $pinned ]]
  owner=${BASH_REMATCH[1]} repo=${BASH_REMATCH[3]} commit=${source##*@}
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  if ! git clone --quiet --bare --single-branch --filter=tree:0 "https://github.com/$owner/$repo.git" "$work/source.git" 2>"$work/log"; then
    echo "::error::could not read the default branch of $owner/$repo to check PERFBOT_SOURCE's commit" >&2
    exit 3
  fi
  if ! GIT_NO_LAZY_FETCH=1 git -C "$work/source.git" merge-base --is-ancestor "$commit" HEAD 2>/dev/null; then
    echo "::error::PERFBOT_SOURCE's commit is not on the default branch of $owner/$repo (a fork's commit, or one of another branch): pin a commit of that branch" >&2
    exit 2
  fi
fi
if [ "$kind" = check ] || [ "$kind" = verify ]; then
  if [ "$source" = . ]; then echo "perfbot from this checkout"; else echo "perfbot from $source"; fi
  exit 0
fi
if [ "$kind" = core ] && [ ! -f "$lock" ]; then
  echo "::error::no lock of perfbot's core beside install.sh (.github/perfbot/requirements-core.txt): copy perfbot's, of the commit PERFBOT_SOURCE names" >&2
  exit 2
fi
python3 -m venv .venv
if [ "$kind" = core ]; then
  .venv/bin/pip install -q --require-hashes --only-binary :all: -r "$lock"
  if [ "$source" = . ]; then target=".$extra"; else target="perfbot$extra @ $source"; fi
  .venv/bin/pip install -q --no-deps --no-build-isolation "$target"
  .venv/bin/pip check  # the lock holds every dependency of the perfbot just installed
  exit 0
fi
if [ "$source" = . ]; then
  .venv/bin/pip install -q ".$extra"
  exit 0
fi
.venv/bin/pip install -q "perfbot$extra @ $source"
if [ "$kind" = gpu ]; then
  .venv/bin/pip install -q .  # the measured project, with what its kernels import
fi
