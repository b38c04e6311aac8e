#!/usr/bin/env bash
# On the H200 of the device tool: the results files behind the README's tables, with the device's
# copy of the tree committed as the bundled main (its .git may be stale), so that the results
# name the commit they measured and kernels_dirty is false.
#   git bundle create device-base.bundle main     # here, before the call, with everything committed
#   scripts/gpu-final-results.sh OUT_DIR SUITE...
source "$(dirname "$0")/device-ab-setup.sh"
shift
git reset -q ab-base
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "the copy differs from the bundled main:"; git status --short --untracked-files=no | head; exit 3
fi
scripts/gpu-results.sh "$out" "$@"
tar -czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")"
