"""The compiled kernels of this repository's subject as a run recorded them: one row per fused
and fused-pointer benchmark of a results file (its plan, dtype and shape), with the kernel's
tiles, warps and stages, registers, spills, shared memory, occupancy and SASS counts.

    python experiments/2026-12-02-h200-compiled/kernel_table.py runs/c1/aa-new-2/base.json.gz > kernels.md
"""

import gzip
import json
import sys
from pathlib import Path

results = json.loads(gzip.decompress(Path(sys.argv[1]).read_bytes()))
print(
    "| benchmark | dtype | plan | kernel | BLOCK M×N×K | warps | stages | grid | registers | spills st/ld (B) "
    "| shared (B) | occupancy | mma | tma | global ld/st | shared ld/st | SASS |"
)
print("|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|")
rows = []
for b in results["benchmarks"]:
    if b["kernel"] not in ("fused", "fused-pointer") or not (b.get("compiled") or {}).get("kernels"):
        continue
    config = b.get("config") or {}
    for k in b["compiled"]["kernels"]:
        s, n = k["specialization"], k["instructions"]
        occupancy = k["occupancy"]
        rows.append(
            (
                b["kernel"] != "fused",
                b["suite"],
                b["case"],
                f"| {b['kernel']}{'[tanh]' if b['variant'] else ''} · {b['suite']}/{b['case']} · M={b['shape']['M']} K={b['shape']['K']} N={b['shape']['N']} "
                f"| {b['dtype']} | {config.get('shape_class', '?')}, {config.get('source', '?')} | {k['name']} "
                f"| {s.get('BLOCK_M')}×{s.get('BLOCK_N')}×{s.get('BLOCK_K')} | {k['num_warps']} | {k['num_stages']} "
                f"| {k['grid'][0]} | {k['registers']} | {k['spill_store_bytes']}/{k['spill_load_bytes']} "
                f"| {k['static_shared_bytes'] + k['dynamic_shared_bytes']} "
                f"| {occupancy['blocks_per_sm']} ({occupancy['limited_by']}) | {n['mma']} | {n['tma']} "
                f"| {n['global_load']}/{n['global_store']} | {n['shared_load']}/{n['shared_store']} | {n['total']} |",
            )
        )
for *_, row in sorted(rows):
    print(row)
