"""Aside: load both sides with perfbot's own loader, as the A/B does, and look at which file each
side's kernel code really is, and which of zeros_like / empty_like its geglu_forward calls."""
import inspect, sys
from pathlib import Path
from perfbot.declarations import load_sides
sides, missing = load_sides({"base": Path("wt-base/perfbot_bench"), "head": Path("wt-head/perfbot_bench")})
for side, loaded in sides.items():
    fn = loaded.subject.implementations["liger"].fn
    cls = fn.__globals__["LigerGELUMulFunction"]
    mod = sys.modules.get(cls.__module__) or inspect.getmodule(cls)
    fwd = cls.forward.__wrapped__.__globals__["geglu_forward"]
    src = inspect.getsource(fwd)
    kern = fwd.__globals__["_geglu_tanh_forward_kernel"]
    print(side, fwd.__code__.co_filename, "| kernel:", kern.fn.__code__.co_filename,
          "| zeros_like" if "zeros_like" in src else "| empty_like" if "empty_like" in src else "?")
print("liger_kernel in sys.modules after loading:", "liger_kernel" in sys.modules)
import liger_kernel.ops.geglu as g
print("a plain import afterwards:", g.__file__)
