#!/usr/bin/env bash
# Install perfbot into .venv for a job: `install.sh core` (compare, comment, baseline: no PyTorch)
# or `install.sh gpu` (the measuring extra, then the measured project with its own dependencies).
# Where this repository is perfbot itself, PERFBOT_SOURCE is unset or "." and perfbot is installed
# from the checkout. Any other repository sets the repository variable PERFBOT_SOURCE to where pip
# finds perfbot, pinned to a commit: git+https://github.com/ORG/perfbot@<40-hex commit>.
set -euo pipefail
kind=${1:?usage: .github/perfbot/install.sh core|gpu}
source=${PERFBOT_SOURCE:-.}
case "$kind" in
  core) extra= ;;
  gpu) extra="[gpu]" ;;
  *) echo "install.sh: core or gpu, got $kind" >&2; exit 2 ;;
esac
if [ "$source" != . ] && [[ ! "$source" =~ @[0-9a-f]{40}$ ]] && [[ ! "$source" =~ ^file:// ]]; then
  echo "::error::PERFBOT_SOURCE must pin perfbot to a full commit (…/perfbot@<40-hex SHA>), got $source" >&2
  exit 2
fi
if [ "$source" = . ] && ! python3 -c 'import sys, tomllib; sys.exit(tomllib.load(open("pyproject.toml", "rb"))["project"]["name"] != "perfbot")' 2>/dev/null; then
  echo "::error::this repository is not perfbot: set the repository variable PERFBOT_SOURCE to perfbot pinned at a commit (git+https://github.com/ORG/perfbot@SHA)" >&2
  exit 2
fi
python3 -m venv .venv
if [ "$source" = . ]; then
  .venv/bin/pip install -q ".$extra"
  exit 0
fi
.venv/bin/pip install -q "perfbot$extra @ $source"
if [ "$kind" = gpu ]; then
  .venv/bin/pip install -q .  # the measured project, with what its kernels import
fi
