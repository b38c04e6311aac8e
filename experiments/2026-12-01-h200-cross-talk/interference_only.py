"""The selftest's interference check alone (perfbot.interference), without the selftest's checks,
for a longer run than the selftest's default 400 rounds.

    python experiments/2026-12-01-h200-cross-talk/interference_only.py KERNELS SUITE CASE ROUNDS [SKIP...]
"""

import json
import sys
from pathlib import Path

from perfbot.interference import measure_interference
from perfbot.subject import load_subject
from perfbot.thresholds import load_policy

kernels, suite, case, rounds, skipped = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:]
loaded = load_subject(kernels)
policy = load_policy(kernels.parent / "thresholds.yaml")
crossed = measure_interference(loaded, loaded.case(suite, case), "fused", 10, rounds, policy, tuple(skipped))
print(json.dumps(crossed.to_json(), indent=1))
print(f"slowed: {crossed.slowed.label} {crossed.slowed.percent:+.2f}%", file=sys.stderr)
for moved in sorted(crossed.others, key=lambda m: -abs(m.percent)):
    interval = f"[{moved.low_percent:+.2f}%, {moved.high_percent:+.2f}%]"
    print(f"  {moved.label:<40} {moved.percent:+.2f}% {interval}", file=sys.stderr)
