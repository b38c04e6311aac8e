#!/usr/bin/env bash
# The GPU kinds a repository measures on: the repository variable PERFBOT_GPU_LABELS, a JSON array
# of runner labels (default ["a100"]), checked and written as the step output `labels` (compact
# JSON) for a job matrix. A label names a runner, an artifact and a folder, so each is 1 to 64
# letters, digits, '.', '_' or '-', starting with a letter or digit (perfbot's report.GPU_LABEL);
# at most 16, each once.
#   PERFBOT_GPU_LABELS='["a100", "h200"]' .github/perfbot/gpu-labels.sh
set -euo pipefail
given=${PERFBOT_GPU_LABELS:-'["a100"]'}
# One JSON value (slurped, so a second one is refused too), anchored at the string's ends.
check='length == 1 and (.[0] | type == "array" and length >= 1 and length <= 16 and (unique | length) == length
  and all(.[]; type == "string" and test("\\A[A-Za-z0-9][A-Za-z0-9._-]{0,63}\\z")))'
if ! labels=$(jq -sce "if $check then .[0] else false end" <<<"$given" 2>/dev/null); then
  # The value is not echoed: it would be read as workflow commands.
  echo "::error::PERFBOT_GPU_LABELS must be a JSON array of 1 to 16 distinct runner labels (letters, digits, '.', '_', '-'), e.g. [\"a100\", \"h200\"]" >&2
  exit 2
fi
echo "labels=$labels" >>"${GITHUB_OUTPUT:?}"
echo "GPU kinds: $labels"
