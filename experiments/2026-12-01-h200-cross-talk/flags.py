"""The rows a set of A/Bs flagged, and whether a flag came back: chance flags land on different
rows each time, a bias lands on the same row in the same direction.

    python experiments/2026-12-01-h200-cross-talk/flags.py [--skip KERNEL] RUN_DIR...

Each RUN_DIR holds a `perfbot ab --out-dir` (comparison.json or comparison.json.gz). Per run:
its headline, its flagged rows (regression or improvement; the failing ones marked) and how many
an A/A would flag by chance at most: rows x alpha (the 99% confidence sequence is exceeded, on
either side, with probability at most alpha). Then every row flagged the same way in two or
more runs. Rows of KERNEL (the kernel a reproducer changed) are left out of that list.
"""

import collections
import gzip
import json
import sys
from pathlib import Path

args = sys.argv[1:]
skip = set()
while args and args[0] == "--skip":
    skip.add(args[1])
    args = args[2:]
seen: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
for run in map(Path, args):
    plain, packed = run / "comparison.json", run / "comparison.json.gz"
    comparison = json.loads(plain.read_text() if plain.exists() else gzip.open(packed).read())
    rows = comparison["comparisons"]
    alpha = 1 - comparison["confidence"]
    print(f"{run.name}: {comparison['headline']}")
    print(f"  {len(rows)} rows; an A/A flags at most {len(rows) * alpha:.2f} of them by chance (rows x alpha)")
    for row in rows:
        if row["verdict"] not in ("regression", "improvement"):
            continue
        b = row["benchmark"]
        variant = "".join(f"[{k}={v}]" for k, v in sorted(b["variant"].items()))
        key = (b["kernel"] + variant, f"{b['suite']}/{b['case']}")
        seen[key].append(f"{run.name} {row['verdict']}")
        failing = "FAILS" if row["fails"] else "does not fail"
        print(f"  {key[0]} on {key[1]}: {row['verdict']}, {failing}: {row['reason'][:150]}")
left_out = f" (leaving out {', '.join(sorted(skip))})" if skip else ""
print(f"rows flagged the same way in two or more runs{left_out}:")
repeated = 0
for (kernel, case), runs in sorted(seen.items()):
    for verdict in ("regression", "improvement"):
        same = [run for run in runs if run.endswith(verdict)]
        if kernel.partition("[")[0] not in skip and len(same) > 1:
            repeated += 1
            print(f"  {kernel} on {case}: {verdict} in {len(same)} runs ({', '.join(r.split()[0] for r in same)})")
print(f"  {repeated or 'none'}")
