"""A generated repository of autotuned kernels, as the field writes them: `tunedlib/ops.py` holds
`@triton.autotune`d kernels (a `triton.heuristics` one among them, one that accumulates with
`reset_to_zero`, one that works in place with `restore_value`), each called through a
`torch.autograd.Function`; `perf/` is its perfbot subject. Options plant a bug in one config or
take a hook away, as a change to such kernels can."""

from __future__ import annotations

from pathlib import Path

# Three configs; every kernel takes them.
CONFIGS = "[triton.Config({'BLOCK': b}, num_warps=w) for b, w in ((16, 1), (32, 2), (64, 4))]"

OPS = '''\
"""Elementwise kernels, autotuned over the block size."""

import torch
import triton
import triton.language as tl

CONFIGS = {configs}


@triton.autotune(configs=CONFIGS, key=["n"]{prune})
@triton.heuristics(values={{"EVEN": lambda args: args["n"] % args["BLOCK"] == 0}})
@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets) * 2)
    else:
        if BLOCK == {wrong_block}:
            x = tl.load(x_ptr + offsets, mask=offsets < n - 1, other=0.0)  # wrong: drops the last element
        else:
            x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
        tl.store(y_ptr + offsets, x * 2, mask=offsets < n)


@triton.autotune(configs=CONFIGS, key=["n"]{reset})
@triton.jit
def _sum_kernel(x_ptr, total_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(total_ptr, tl.sum(tl.load(x_ptr + offsets, mask=offsets < n, other=0.0), axis=0))


@triton.autotune(configs=CONFIGS, key=["n"]{restore})
@triton.jit
def _double_in_place_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    tl.store(y_ptr + offsets, tl.load(y_ptr + offsets, mask=inside) * 2, mask=inside)


def _grid(n):
    return lambda meta: (triton.cdiv(n, meta["BLOCK"]),)


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.empty_like(x)
        _scale_kernel[_grid(x.numel())](x, y, x.numel())
        return y

    @staticmethod
    def backward(ctx, grad):
        return 2 * grad


def total(x):
    found = torch.zeros(1, device=x.device, dtype=torch.float32)
    _sum_kernel[_grid(x.numel())](x, found, x.numel())
    return found


def doubled(x):
    y = x.clone()
    _double_in_place_kernel[_grid(y.numel())](y, y.numel())
    return y
'''

SUBJECT = """\
import torch

from perfbot import Subject
from tunedlib.ops import Scale, doubled, total


def make_inputs(case, generator):
    return (torch.randn(case.n, generator=generator, device=generator.device),)


def reference(x):
    return 2 * x.double()


subject = Subject(name="tuned", inputs=make_inputs, reference=reference, tolerance={"float32": 1e-5})


@subject.implementation("scale", under_test=True)
def scale(x):
    return Scale.apply(x)


@subject.implementation("total", under_test=True, reference=lambda x: x.double().sum().reshape(1))
def summed(x):
    return total(x)


@subject.implementation("doubled", under_test=True)
def double(x):
    return doubled(x)


@subject.implementation("torch")
def torch_baseline(x):
    return 2 * x
"""

SUITES = """\
quick:
  dtype: float32
  implementations: [scale, total, doubled, torch]
  cases:
    - {name: odd, n: 45}
    - {name: even, n: 64}
"""


def autotuned_repository(
    root: Path,
    wrong_block: int = 0,
    prune: str = "",
    reset: bool = True,
    restore: bool = True,
) -> Path:
    """The repository at `root`: the kernels, their subject, its pyproject. `wrong_block` plants a
    wrong load mask in the config of that BLOCK; `prune` is the scale kernel's prune_configs_by
    (Python text); `reset` and `restore` keep the hooks the sum and in-place kernels need."""
    (root / "tunedlib").mkdir(parents=True)
    (root / "tunedlib" / "__init__.py").write_text("")
    (root / "tunedlib" / "ops.py").write_text(
        OPS.format(
            configs=CONFIGS,
            prune=f", prune_configs_by={prune}" if prune else "",
            wrong_block=wrong_block,
            reset=', reset_to_zero=["total_ptr"]' if reset else "",
            restore=', restore_value=["y_ptr"]' if restore else "",
        )
    )
    (root / "perf").mkdir()
    (root / "perf" / "__init__.py").write_text(SUBJECT)
    (root / "perf" / "suites.yaml").write_text(SUITES)
    (root / "pyproject.toml").write_text('[tool.perfbot]\nkernels = "perf"\ntriton-commit = "' + 40 * "0" + '"\n')
    return root
