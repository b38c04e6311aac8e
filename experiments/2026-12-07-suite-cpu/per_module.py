"""Sum cpuplug.py's rows per test module: python3 per_module.py DIR [TOP]."""

import collections
import json
import sys
from pathlib import Path

rows = [json.loads(line) for path in Path(sys.argv[1]).glob("cpu-*.jsonl") for line in path.open()]
by_module = collections.Counter()
for row in rows:
    by_module[row["test"].split("::")[0]] += row["self"] + row["children"]
total = sum(by_module.values())
print(f"{len(rows)} tests, {total:.0f} CPU-s")
for module, cpu in by_module.most_common(int(sys.argv[2]) if len(sys.argv) > 2 else 30):
    print(f"{cpu:7.1f}  {module}")
