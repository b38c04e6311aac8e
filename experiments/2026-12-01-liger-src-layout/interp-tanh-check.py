"""Aside, outside perfbot: Triton 3.9's interpreter leaves libdevice functions as their stubs
(`tanh` returns None), so swap the kernel's `tanh` for a tl.exp form and compare Liger's kernel
with the subject's float64 reference on the quick cases. Run with TRITON_INTERPRET=1."""
import sys
import torch
import triton
import triton.language as tl

sys.path.insert(0, ".")
import perfbot_bench as s  # noqa: E402
from liger_kernel.ops import geglu  # noqa: E402


@triton.jit
def exp_tanh(x):
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0, -t, t)


geglu._geglu_tanh_forward_kernel.fn.__globals__["tanh"] = exp_tanh
print("geglu.py:", geglu.__file__)
for case in s.QUICK:
    g = torch.Generator().manual_seed(0)
    a, b = s.make_inputs(case, g)
    ref = s.geglu_float64(a, b)
    out = s.liger_geglu(a, b)
    print(case.name, case.rows, case.cols, "rel. error %.2e" % ((out.double() - ref).norm() / ref.norm()).item())
