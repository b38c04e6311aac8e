"""Does loads.py find this Triton's compiled kernels of the subject, and does forgetting them load
them anew? Runs fused and fused-pointer once on quick/odd, forgets, runs again, and prints what
was found and held, and the CUDA function handles before and after (a new load, a new handle).

    python experiments/2026-12-01-h200-cross-talk/probe_forget.py KERNELS
"""

import sys
from pathlib import Path

import torch

from perfbot import loads
from perfbot.subject import load_subject

loaded = load_subject(Path(sys.argv[1]))
case = loaded.case("quick", "odd")
generator = torch.Generator(device="cuda").manual_seed(0)
inputs = loaded.subject.inputs(case, generator)
kernels = loads.triton_kernels(loaded.module)


def handles() -> list[int]:
    for name in ("fused", "fused-pointer"):
        loaded.implementations[name].fn(*inputs)
    torch.cuda.synchronize()
    caches = [c[0] if isinstance(c, tuple) else c for k in kernels for c in k.device_caches.values()]
    return sorted(getattr(compiled, "function", None) or 0 for cache in caches for compiled in cache.values())


before = handles()
held = loads.forget_compiled(kernels)
after = handles()
print(f"kernels found: {sorted(getattr(k, '__name__', repr(k)) for k in kernels)}; caches held: {len(held)}")
print(f"function handles before: {before}; after: {after}; all new: {not set(before) & set(after)}")
