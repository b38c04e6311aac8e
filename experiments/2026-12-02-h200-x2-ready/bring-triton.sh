#!/usr/bin/env bash
# Brings a Triton wheel larger than one device call's 64 MiB in parts (`split -b 60M
# triton-X.whl .whl/triton.part.`, one part carried a call), while the machine stays warm:
#   experiments/2026-12-02-h200-x2-ready/bring-triton.sh PART_FILE [last]
# Each call appends its part to /tmp/triton.whl; the last installs it into /tmp/triton-head,
# which gpu-two.sh's `tritons` part takes as the head side's Triton.
set -eu
cat "${1:?usage: $0 PART_FILE [last]}" >> /tmp/triton.whl
ls -l /tmp/triton.whl
if [ "${2:-}" = last ]; then
  rm -rf /tmp/triton-head && mkdir -p /tmp/triton-head
  cp /tmp/triton.whl /tmp/triton-head.whl.zip && python3 -m zipfile -e /tmp/triton-head.whl.zip /tmp/triton-head
  PYTHONPATH=/tmp/triton-head python3 -c 'import triton; print("Triton", triton.__version__, triton.__file__)'
fi
