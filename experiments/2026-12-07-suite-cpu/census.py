"""Sum proclog.py's records by kind of process: python3 census.py [DIR]."""

import collections
import glob
import json
import sys

rows = [json.load(open(f)) for f in glob.glob(f"{sys.argv[1] if len(sys.argv) > 1 else '/tmp/proclog'}/*.json")]
print(f"{len(rows)} processes, {sum(r['cpu'] for r in rows):.0f} CPU-s")
cpu, count = collections.Counter(), collections.Counter()
for r in rows:
    kind = "pytest worker" if r["argv"][:1] == ["-c"] and r["wall"] > 100 else r["kind"]
    imported = "PyTorch" if r["torch"] else "scipy" if r["scipy"] else "neither"
    cpu[kind, imported] += r["cpu"]
    count[kind, imported] += 1
for key, seconds in cpu.most_common():
    print(f"{seconds:7.1f} CPU-s {count[key]:4d} processes  {key[0]}, imported {key[1]}")
