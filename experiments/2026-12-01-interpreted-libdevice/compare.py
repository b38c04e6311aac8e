"""The interpreter's libdevice (perfbot/measuring/interpreted_libdevice.py) against the GPU's:
each function of tests/test_interpreter_libdevice.py's table, on the same 129 inputs, compiled
on the GPU (the real libdevice) and interpreted on the CPU; the difference in units in the last
place of the result, and every differing special value. From the repository's root:
  python3 experiments/2026-12-01-interpreted-libdevice/compare.py gpu OUT/gpu.pt
  TRITON_INTERPRET=1 python3 experiments/2026-12-01-interpreted-libdevice/compare.py cpu OUT/cpu.pt
  python3 experiments/2026-12-01-interpreted-libdevice/compare.py diff OUT/gpu.pt OUT/cpu.pt
"""

import sys

sys.path.insert(0, ".")
mode = sys.argv[1]
if mode == "cpu":
    from perfbot.measuring.checking import choose_device

    choose_device("cpu")  # as perfbot check does
import torch  # noqa: E402
from triton.language.extra.cuda import libdevice  # noqa: E402

from tests.test_interpreter_libdevice import FUNCTIONS, INT, _launch  # noqa: E402

N = 129


def run(device: str) -> dict:
    results = {}
    for f in FUNCTIONS:
        for dtype in f.dtypes:
            if dtype == torch.float16:  # computed in float32: the float32 row says it
                continue
            generator = torch.Generator().manual_seed(N)
            args = [d.draw(N, generator) for d in f.domains]
            args = [a.to(dtype) if a.is_floating_point() or not dtype.is_floating_point else a for a in args]
            out = torch.full((N,), -7, dtype=f.result or dtype, device=device)
            try:
                _launch(getattr(libdevice, f.name), [a.to(device) for a in args], out)
                results[f"{f.name}{'i' if INT in f.domains else ''}-{str(dtype)[6:]}"] = (args, out.cpu())
            except Exception as e:  # noqa: BLE001 -- say it and go on
                print(f.name, dtype, "raised", type(e).__name__, str(e)[:300])
    return results


def ordered(x: torch.Tensor) -> torch.Tensor:
    """Floats as integers in the order of their values: consecutive floats differ by 1."""
    bits = x.view({torch.float32: torch.int32, torch.float64: torch.int64}[x.dtype]).long()
    return torch.where(bits < 0, -(bits & ((1 << (x.element_size() * 8 - 1)) - 1)), bits)


def diff(gpu: dict, cpu: dict) -> None:
    print(f"{'function':<24} {'max ulp':>8} {'elements differing':>19}  special values that differ (input: gpu, cpu)")
    for key, (args, g) in gpu.items():
        c = cpu[key][1]
        if g.is_floating_point():
            nan = torch.isnan(g) | torch.isnan(c)
            same_nan = torch.isnan(g) & torch.isnan(c)
            ulp = (ordered(g) - ordered(c)).abs().where(~nan, torch.zeros((), dtype=torch.long))
            ulp = torch.where(nan & ~same_nan, torch.full_like(ulp, -1), ulp)
            bad = (ulp != 0) & (~torch.isfinite(g) | ~torch.isfinite(c) | ~torch.isfinite(args[0]) | (ulp < 0))
            worst = int(ulp.max())
            count = int((ulp != 0).sum())
        else:
            bad = g != c
            worst, count = (0 if not bad.any() else -1), int(bad.sum())
        shown = "; ".join(
            f"{tuple(a[i].item() for a in args)}: {g[i].item()}, {c[i].item()}" for i in bad.nonzero().flatten()[:4]
        )
        print(f"{key:<24} {worst:>8} {count:>19}  {shown}")


if mode in ("gpu", "cpu"):
    torch.save(run("cuda" if mode == "gpu" else "cpu"), sys.argv[2])
else:
    diff(torch.load(sys.argv[2]), torch.load(sys.argv[3]))
