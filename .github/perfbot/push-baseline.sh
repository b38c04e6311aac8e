#!/usr/bin/env bash
# Store a results file as the newest baseline on the perfbot-baselines branch, check the store's
# history for a step no earlier check reported, rebuild the history site in the branch's docs/
# (GitHub Pages can serve it from there), and push, retrying when another run pushed first (each
# attempt starts again from the branch's tip). Exits as the history check did once the push is
# done: 1 when the newest runs start a slower step, so the job fails and says where it lies.
#   .github/perfbot/push-baseline.sh RESULTS
# PERFBOT_HISTORY_GIT: a full clone of the repository, so the site links runs to their pull requests.
# The remote is PERFBOT_BASELINE_REMOTE, or this repository on GitHub. With GITHUB_TOKEN set and
# an http(s) remote, git authenticates with it through a header held in git's environment
# (GIT_CONFIG_*), scoped to that remote: the token is on no command line (none shows it in the
# process list), in no URL and in no file.
set -euo pipefail
results=$(realpath "${1:?usage: .github/perfbot/push-baseline.sh RESULTS}")
perfbot=${PERFBOT:-.venv/bin/perfbot}
branch=perfbot-baselines
remote=${PERFBOT_BASELINE_REMOTE:-${GITHUB_SERVER_URL:-https://github.com}/${GITHUB_REPOSITORY:?}.git}
if [ -n "${GITHUB_TOKEN:-}" ] && [[ "$remote" =~ ^https?:// ]]; then
  basic=$(printf 'x-access-token:%s' "$GITHUB_TOKEN" | base64 -w0)
  export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0="http.$remote.extraHeader"
  export GIT_CONFIG_VALUE_0="Authorization: Basic $basic"
  unset basic
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for attempt in 1 2 3 4 5; do
  rm -rf "$work/repo"
  if ! git clone --quiet --depth 1 --branch "$branch" "$remote" "$work/repo" 2>/dev/null; then
    git init --quiet "$work/repo"
    git -C "$work/repo" checkout --quiet --orphan "$branch"
  fi
  "$perfbot" baseline update "$results" --store "$work/repo/store"
  check=0
  mkdir -p "$work/repo/docs"
  "$perfbot" history --store "$work/repo/store" --check --html "$work/repo/docs" \
    ${PERFBOT_HISTORY_GIT:+--git "$PERFBOT_HISTORY_GIT"} >"$work/steps.txt" || check=$?
  cat "$work/steps.txt"
  git -C "$work/repo" add -- store docs ':(exclude)store/.lock'
  git -C "$work/repo" -c user.name=perfbot -c user.email=perfbot@users.noreply.github.com \
    commit --quiet -m "baseline: ${GITHUB_SHA:-$(basename "$results")}"
  if git -C "$work/repo" push --quiet "$remote" "HEAD:refs/heads/$branch"; then
    echo "stored on $branch (attempt $attempt)"
    if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$GITHUB_STEP_SUMMARY" ]; then
      { echo '```'; cat "$work/steps.txt"; echo '```'; } >>"$GITHUB_STEP_SUMMARY"
    fi
    exit "$check"
  fi
  echo "push rejected (attempt $attempt): another run stored first; retrying from the new tip" >&2
  sleep $((attempt * 3))
done
echo "perfbot: error: could not push to $branch after 5 attempts" >&2
exit 3
