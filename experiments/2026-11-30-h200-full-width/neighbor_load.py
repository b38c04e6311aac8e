"""The heaviest case of the suites, run back to back on one GPU for a given time: the load beside
an A/A on the other GPU of the host (gpu-interference.sh). The fused kernel on
generated/odd-m5722 (M=5722, K=8168, N=27448: the largest M*K*N of kernels/suites.yaml).

    CUDA_VISIBLE_DEVICES=1 python neighbor_load.py SECONDS
"""

import sys
import time
from pathlib import Path

import torch

from perfbot.subject import load_subject

ROOT = Path.cwd()  # the repository root: gpu-interference.sh runs it from there
loaded = load_subject(ROOT / "kernels")
case = next(c for c in loaded.suites["generated"].cases if c.name == "odd-m5722")
inputs = loaded.subject.inputs(case, torch.Generator(device="cuda").manual_seed(0))
fused = loaded.subject.implementations["fused"].fn
end = time.monotonic() + float(sys.argv[1])
calls = 0
while time.monotonic() < end:
    for _ in range(10):
        fused(*inputs)
    torch.cuda.synchronize()
    calls += 10
print(f"neighbor: {calls} calls of fused on generated/odd-m5722 in {sys.argv[1]} s", flush=True)
