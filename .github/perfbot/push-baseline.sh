#!/usr/bin/env bash
# Store results files (one per GPU kind; the store files each under its GPU) as the newest
# baselines on the perfbot-baselines branch, in one commit, check the store's history for a step
# no earlier check reported, and push, retrying when another run pushed first (each attempt
# starts again from the branch's tip). The history site, rebuilt whole from the store that was
# pushed, goes to the folder PERFBOT_SITE_DIR (the workflow deploys it to GitHub Pages; nothing
# is pushed for it). Exits as the history check did once the push is done: 1 when the newest runs
# start a slowdown of the subject's own code.
#   .github/perfbot/push-baseline.sh RESULTS...
# PERFBOT_HISTORY_GIT: a full clone of the repository, so the site links runs to their pull requests.
# PERFBOT_STEPS_JSON: where the check writes the new steps as JSON (--out-steps), for the bisect
# and issue jobs; a results file in a folder perfbot-baseline-LABEL (as the workflow downloads
# them) was measured on runner LABEL, which bisects the steps of its GPU.
# The remote is PERFBOT_BASELINE_REMOTE, or this repository on GitHub. With GITHUB_TOKEN set and
# an http(s) remote, git authenticates with it through a header held in git's environment
# (GIT_CONFIG_*), scoped to that remote: the token is on no command line (none shows it in the
# process list), in no URL and in no file.
set -euo pipefail
[ "$#" -gt 0 ] || { echo "usage: .github/perfbot/push-baseline.sh RESULTS..." >&2; exit 2; }
results=()
for file in "$@"; do results+=("$(realpath "$file")"); done
perfbot=${PERFBOT:-.venv/bin/perfbot}
branch=perfbot-baselines
remote=${PERFBOT_BASELINE_REMOTE:-${GITHUB_SERVER_URL:-https://github.com}/${GITHUB_REPOSITORY:?}.git}
if [ -n "${GITHUB_TOKEN:-}" ] && [[ "$remote" =~ ^https?:// ]]; then
  basic=$(printf 'x-access-token:%s' "$GITHUB_TOKEN" | base64 -w0)
  export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0="http.$remote.extraHeader"
  export GIT_CONFIG_VALUE_0="Authorization: Basic $basic"
  unset basic
fi
steps=()
if [ -n "${PERFBOT_STEPS_JSON:-}" ]; then
  steps=(--out-steps "$PERFBOT_STEPS_JSON")
  for file in "${results[@]}"; do
    folder=$(basename "$(dirname "$file")")
    if [[ "$folder" == perfbot-baseline-* ]]; then steps+=(--runner "${folder#perfbot-baseline-}=$file"); fi
  done
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for attempt in 1 2 3 4 5; do
  rm -rf "$work/repo"
  if ! git clone --quiet --depth 1 --branch "$branch" "$remote" "$work/repo" 2>/dev/null; then
    git init --quiet "$work/repo"
    git -C "$work/repo" checkout --quiet --orphan "$branch"
  fi
  # Anyone's workflow can push the branch: a store there that is a link would be written through,
  # out of the clone. Below it, perfbot keeps its writes inside the store itself.
  if [ -L "$work/repo/store" ]; then
    echo "perfbot: error: store on $branch is a symlink (to $(readlink "$work/repo/store")); it must be a folder" >&2
    exit 2
  fi
  for file in "${results[@]}"; do
    "$perfbot" baseline update "$file" --store "$work/repo/store"
  done
  check=0
  rm -rf "$work/site"
  # A lost race's steps are of a store that was never pushed: this attempt writes them anew.
  if [ -n "${PERFBOT_STEPS_JSON:-}" ]; then rm -f "$PERFBOT_STEPS_JSON"; fi
  "$perfbot" history --store "$work/repo/store" --check "${steps[@]}" --out-html "$work/site" \
    ${PERFBOT_HISTORY_GIT:+--git "$PERFBOT_HISTORY_GIT"} >"$work/steps.txt" 2>&1 || check=$?
  cat "$work/steps.txt"
  git -C "$work/repo" add -- store ':(exclude)store/.lock'
  git -C "$work/repo" -c user.name=perfbot -c user.email=perfbot@users.noreply.github.com \
    commit --quiet -m "baseline: ${GITHUB_SHA:-$(basename "${results[0]}")}"
  if git -C "$work/repo" push --quiet "$remote" "HEAD:refs/heads/$branch"; then
    echo "stored on $branch (attempt $attempt)"
    if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$GITHUB_STEP_SUMMARY" ]; then
      # The check's lines hold the store's values: in a fence longer than any run of backticks in
      # them, and closed on a line of its own, no line can end the code block and render as markdown.
      longest=$(awk '{ while (match($0, /`+/)) { if (RLENGTH > n) n = RLENGTH; $0 = substr($0, RSTART + RLENGTH) } }
        END { print n + 0 }' "$work/steps.txt")
      fence=$(printf '%*s' "$((longest < 3 ? 3 : longest + 1))" '' | tr ' ' '`')
      {
        echo "$fence"
        cat "$work/steps.txt"
        if [ -n "$(tail -c 1 "$work/steps.txt")" ]; then echo; fi
        echo "$fence"
      } >>"$GITHUB_STEP_SUMMARY"
    fi
    # The site of the store just pushed, never of an attempt that lost the race.
    if [ -n "${PERFBOT_SITE_DIR:-}" ] && [ -f "$work/site/index.html" ]; then
      rm -rf "$PERFBOT_SITE_DIR"
      mkdir -p "$(dirname "$PERFBOT_SITE_DIR")"
      cp -R "$work/site" "$PERFBOT_SITE_DIR"
      echo "the history site is in $PERFBOT_SITE_DIR"
    fi
    exit "$check"
  fi
  echo "push rejected (attempt $attempt): another run stored first; retrying from the new tip" >&2
  sleep $((attempt * 3))
done
echo "perfbot: error: could not push to $branch after 5 attempts" >&2
exit 3
