#!/usr/bin/env bash
# Whether this repository requires a code owner's review of what runs on the GPU runner (SECURITY.md,
# setting 7): the CODEOWNERS file GitHub reads (the first of .github/CODEOWNERS, CODEOWNERS and
# docs/CODEOWNERS) names at least one owner, and no owner is still the placeholder @OWNER/...
# that perfbot's files ship with. Exits 0 if so; else says why in one ::error:: line and exits 2:
# the workflows' first jobs run it, so no GPU job starts until the file is filled in.
#   .github/perfbot/codeowners.sh
set -euo pipefail
file=
for candidate in .github/CODEOWNERS CODEOWNERS docs/CODEOWNERS; do
  if [ -f "$candidate" ]; then file=$candidate; break; fi
done
fix="name the repository's maintainers there (a team @ORG/NAME or users) and turn on \"Require review from Code Owners\" for main (SECURITY.md, setting 7)"
if [ -z "$file" ]; then
  echo "::error::no CODEOWNERS file, so no change to the workflows needs a maintainer's review: add .github/CODEOWNERS and $fix" >&2
  exit 2
fi
owners=0
placeholder=0
while read -r -a words; do
  case "${words[0]:-}" in '' | '#'*) continue ;; esac
  for owner in "${words[@]:1}"; do
    case "$owner" in '#'*) break ;; esac  # a comment to the end of the line
    owners=$((owners + 1))
    if [[ "${owner,,}" == @owner/* ]]; then placeholder=$((placeholder + 1)); fi
  done
done <"$file"
if [ "$placeholder" -gt 0 ]; then
  echo "::error::$file still names the placeholder @OWNER/... ($placeholder times), so no change needs a code owner's review: replace OWNER with the organization and $fix" >&2
  exit 2
fi
if [ "$owners" -eq 0 ]; then
  echo "::error::$file names no owner, so no change needs a code owner's review: $fix" >&2
  exit 2
fi
echo "code owners: $owners in $file"
