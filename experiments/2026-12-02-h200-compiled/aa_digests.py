"""An A/A's compiled kernels, side by side: per run folder, how many rows carry a compiled change
and how many of those say "same machine code", how many show any difference, and whether every
benchmark's kernels have the same cubin digests in base.json and head.json.

    python experiments/2026-12-02-h200-compiled/aa_digests.py runs/t1/aa-new-1 [more run folders]
"""

import gzip
import json
import sys
from pathlib import Path


def load(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


def digests(results: dict) -> dict:
    return {
        (b["kernel"], json.dumps(b["variant"], sort_keys=True), json.dumps(b["shape"], sort_keys=True), b["dtype"]): [
            k["cubin_sha256"] for k in (b.get("compiled") or {}).get("kernels", [])
        ]
        for b in results["benchmarks"]
    }


for folder in map(Path, sys.argv[1:]):
    rows = load(folder / "comparison.json.gz")["comparisons"]
    changes = [r["compiled_change"] for r in rows if r.get("compiled_change")]
    same = sum(c["same_machine_code"] for c in changes)
    differing = sum(bool(c["kernels"]) or c.get("unknown") is not None for c in changes)
    base, head = digests(load(folder / "base.json.gz")), digests(load(folder / "head.json.gz"))
    kernels = sum(len(v) for v in base.values())
    equal = sum(base[key] == head.get(key) for key in base if base[key])
    print(
        f"{folder}: {len(rows)} rows, {len(changes)} with Triton kernels, {same} same machine code, "
        f"{differing} showing a difference; {kernels} kernels in base, benchmarks with equal cubins "
        f"{equal} of {sum(bool(v) for v in base.values())}, distinct cubins {len({d for v in base.values() for d in v})}"
    )
