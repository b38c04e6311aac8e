"""Whether `perfbot explain` on the CPU compiles the machine code the H200 ran: its records'
SASS digests (sass_sha256) against those a full-width A/A recorded on the H200
(experiments/2026-12-02-h200-compiled/runs/f1/aa-new-3/base.json.gz), benchmark by benchmark.

    perfbot explain HEAD --suite all --kernel fused --kernel fused-pointer --json /tmp/explain.json

    python experiments/2026-12-02-cpu-explain/same_as_gpu.py /tmp/explain.json > same-as-gpu.txt
"""

import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GPU = ROOT / "experiments/2026-12-02-h200-compiled/runs/f1/aa-new-3/base.json.gz"

explained = json.loads(Path(sys.argv[1]).read_text())
recorded = json.loads(gzip.decompress(GPU.read_bytes()))
on_gpu = {
    (b["kernel"], b["suite"], b["case"]): [k["sass_sha256"] for k in b["compiled"]["kernels"]]
    for b in recorded["benchmarks"]
    if b.get("compiled") and not b["variant"]
}
same = 0
for row in explained["rows"]:
    key = (row["implementation"], row["suite"], row["case"])
    cpu = [k["sass_sha256"] for k in row["base"]["compiled"]["kernels"]]
    gpu = on_gpu.get(key)
    same += cpu == gpu
    print(f"{'/'.join(key)}: CPU {[d[:12] for d in cpu]}, H200 {[d[:12] for d in gpu or []]}: {'same' if cpu == gpu else 'DIFFERENT'}")
print(f"{same} of {len(explained['rows'])} the same machine code as on the H200")
