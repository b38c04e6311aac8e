#!/usr/bin/env bash
# Sourced, not run, by each step that prints what the store, a results file or the measured code
# holds (SECURITY.md, "No stored value acts on the runner"):
#   . .github/perfbot/stop-commands.sh
# From there to the end of the step, the runner acts on no line of the log as a workflow command
# (::add-mask::, ::warning::, ...): it stops them under a token made for this step, 16 random
# bytes that no printed value can know, and an EXIT trap resumes them however the step ends.
# stderr joins stdout, so the runner reads both in order. The step prints its own ::error:: lines
# before it sources this, and sets no EXIT trap after (one would replace this one).
perfbot_stop=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
if [[ ! "$perfbot_stop" =~ ^[0-9a-f]{32}$ ]]; then
  echo "::error::no random token to stop workflow commands with" >&2
  exit 3
fi
echo "::stop-commands::$perfbot_stop"
trap 'echo "::$perfbot_stop::"' EXIT
exec 2>&1
