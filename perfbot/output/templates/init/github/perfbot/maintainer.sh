#!/usr/bin/env bash
# Whether every login given is a maintainer of this repository: a role of admin or maintain in
# GET /repos/REPO/collaborators/LOGIN/permission. Writes the step output maintainer=true or
# maintainer=false (and says why in the log); exits 3 when GitHub cannot say, and with --require
# exits 2 where one is not a maintainer (nothing written). A bot (a login ending in [bot]: the
# workflows' own github-actions[bot], an App, Dependabot) and anything else that is not a user's
# login never is one, and is not asked about. Reads GITHUB_TOKEN,
# GITHUB_API_URL (default https://api.github.com) and GITHUB_REPOSITORY; the token goes to curl
# on its standard input, never on a command line.
#   .github/perfbot/maintainer.sh [--require] "$ACTOR" "$TRIGGERING_ACTOR"
set -euo pipefail
require=false
if [ "${1:-}" = --require ]; then require=true; shift; fi
[ "$#" -gt 0 ] || { echo "usage: .github/perfbot/maintainer.sh [--require] LOGIN..." >&2; exit 2; }
api=${GITHUB_API_URL:-https://api.github.com}
answer=true
for login in "$@"; do
  # A user's login as GitHub allows one: 1 to 39 letters, digits and single inner hyphens.
  if [[ ! "$login" =~ ^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$ ]] || [ "${#login}" -gt 39 ]; then
    echo "not a maintainer: a bot or not a user's login"  # not echoed: it would be read as workflow commands
    answer=false
    continue
  fi
  reply=$(printf 'header = "Authorization: Bearer %s"\n' "${GITHUB_TOKEN:?}" | curl --silent --show-error \
    --retry 3 --max-time 30 --config - --header "Accept: application/vnd.github+json" \
    --write-out '\n%{http_code}' "$api/repos/${GITHUB_REPOSITORY:?}/collaborators/$login/permission") || reply=$'\n000'
  code=${reply##*$'\n'}
  role=$(jq -r '.role_name // empty' <<<"${reply%$'\n'*}" 2>/dev/null || true)
  if [ "$code" = 404 ]; then
    role=none  # no such user
  elif [ "$code" != 200 ] || [ -z "$role" ]; then
    echo "::error::could not read the permission of $login in $GITHUB_REPOSITORY (HTTP $code)" >&2
    exit 3
  fi
  case "$role" in
    admin | maintain) echo "$login: $role, a maintainer" ;;
    *) echo "$login: ${role//[^a-z_-]/?}, not a maintainer (admin or maintain)"; answer=false ;;
  esac
done
if [ "$require" = true ] && [ "$answer" != true ]; then
  echo "::error::only a maintainer of this repository (role admin or maintain) may start this workflow, or re-run it" >&2
  exit 2
fi
echo "maintainer=$answer" >>"${GITHUB_OUTPUT:?}"
