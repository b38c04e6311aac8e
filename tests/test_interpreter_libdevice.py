"""libdevice in Triton's interpreter (perfbot/measuring/interpreted_libdevice.py): a real kernel
calling each function, on odd sizes with the last block masked, against torch's float64; the
ways kernels reach libdevice; and `perfbot check` on the CPU of a subject whose kernel calls it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import mpmath  # type: ignore[import-untyped]  # torch installs it (through sympy)
import pytest
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice
from triton.language.extra.cuda import libdevice as cuda_libdevice

from perfbot.measuring.checking import choose_device
from perfbot.measuring.interpreted_libdevice import install
from tests.conftest import ROOT

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
needs_interpreter = pytest.mark.skipif(not INTERPRETED, reason="interpreter tests run where there is no GPU")


@pytest.fixture(autouse=True, scope="module")
def interpreter():
    """The interpreter as `perfbot check` sets it up on the CPU (where tests/conftest.py chose it)."""
    if INTERPRETED:
        choose_device("cpu")


@triton.jit
def _load(ptr, offsets, mask):
    x = tl.load(ptr + offsets, mask=mask)
    if x.dtype == tl.float16:
        x = x.to(tl.float32)  # as kernels do: libdevice has no float16 functions
    return x


@triton.jit
def _apply(
    # Pointers to the arguments and the result
    a_ptr,
    b_ptr,
    c_ptr,
    d_ptr,
    out_ptr,
    # Elements
    n,
    # Meta-parameters
    FN: tl.constexpr,
    ARITY: tl.constexpr,
    BLOCK: tl.constexpr,
):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = _load(a_ptr, offsets, mask)
    if ARITY == 1:
        out = FN(a)
    elif ARITY == 2:
        out = FN(a, _load(b_ptr, offsets, mask))
    elif ARITY == 3:
        out = FN(a, _load(b_ptr, offsets, mask), _load(c_ptr, offsets, mask))
    else:
        out = FN(a, _load(b_ptr, offsets, mask), _load(c_ptr, offsets, mask), _load(d_ptr, offsets, mask))
    tl.store(out_ptr + offsets, out, mask=mask)


BLOCK = 64
SIZES = [1, 37, 129]  # one element; under one block; three blocks, the last masked
FLOATS = (torch.float32, torch.float16, torch.float64)
FLOAT32 = (torch.float32, torch.float16)  # the fast variants and a few more have no float64 form
# dtype: (rtol, atol). One ulp of the result's dtype: the kernel's value is the float64 one rounded
# once (float16: through float32), the reference's too, so the two can part by one rounding at
# most. Float64: how far torch's float64 functions and numpy's or scipy's part, near a zero too.
TOLERANCES = {torch.float16: (2**-10, 0.0), torch.float32: (2**-23, 0.0), torch.float64: (1e-13, 1e-15)}
SPECIALS = [0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1.0, -2.5, 3e-39]


@dataclass(frozen=True)
class Domain:
    """Values of one argument: float64 numbers drawn from [lo, hi), or integers (int32)."""

    lo: float
    hi: float
    kind: str = "uniform"  # or: quarters (ties for the roundings), specials, integers

    def draw(self, n: int, generator: torch.Generator) -> torch.Tensor:
        if self.kind == "integers":
            return torch.randint(int(self.lo), int(self.hi) + 1, (n,), generator=generator, dtype=torch.int32)
        x = self.lo + (self.hi - self.lo) * torch.rand(n, generator=generator, dtype=torch.float64)
        if self.kind == "quarters":
            return torch.round(x * 4) / 4
        if self.kind == "specials":
            x[: len(SPECIALS)] = torch.tensor(SPECIALS[:n], dtype=torch.float64)
        return x


@dataclass(frozen=True)
class Function:
    """A libdevice function, torch's version of it, and the domain of each argument."""

    name: str
    reference: Callable[..., torch.Tensor]
    domains: tuple[Domain, ...]
    dtypes: tuple[torch.dtype, ...] = FLOATS
    result: torch.dtype | None = None  # None: the arguments' dtype
    in_float64: bool = True  # False: the reference runs in the dtype the kernel computes in


def U(lo: float, hi: float) -> Domain:
    return Domain(lo, hi)


Q = Domain(-6, 6, "quarters")
S = Domain(-4, 4, "specials")
INT = Domain(-4, 4, "integers")


def _cbrt(x):
    return torch.sign(x) * x.abs() ** (1 / 3)


def _ilogb(x):
    exponent = torch.floor(torch.log2(x.abs()))
    # CUDA's: INT_MIN for zero and NaN, INT_MAX for the infinities
    exponent = torch.where(torch.isinf(x), 2**31 - 1, exponent)
    return torch.where((x == 0) | torch.isnan(x), -(2**31), exponent)


def _mpmath(function):
    """Torch's float64 Bessel functions are good to about 1e-7 only: these are mpmath's."""

    def reference(x):
        return torch.tensor([float(function(mpmath.mpf(v))) for v in x.tolist()], dtype=torch.float64)

    return reference


def _round_half_away(x):
    return torch.sign(x) * torch.floor(x.abs() + 0.5)


FUNCTIONS = [
    Function("abs", torch.abs, (S,)),
    Function("floor", torch.floor, (Q,)),
    Function("ceil", torch.ceil, (Q,)),
    Function("trunc", torch.trunc, (Q,)),
    Function("round", _round_half_away, (Q,)),  # ties away from zero
    Function("rint", torch.round, (Q,)),  # ties to even
    Function("nearbyint", torch.round, (Q,)),
    Function("sqrt", torch.sqrt, (U(0.01, 100),)),
    Function("sqrt_rn", torch.sqrt, (U(0.01, 100),)),
    Function("rsqrt", torch.rsqrt, (U(0.01, 100),)),
    Function("rsqrt_rn", torch.rsqrt, (U(0.01, 100),), FLOAT32),
    Function("cbrt", _cbrt, (U(-10, 10),)),
    Function("rcbrt", lambda x: 1 / _cbrt(x), (U(0.1, 10),)),
    Function("exp", torch.exp, (U(-8, 8),)),
    Function("exp2", torch.exp2, (U(-10, 10),)),
    Function("exp10", lambda x: torch.pow(10.0, x), (U(-3, 3),)),
    Function("expm1", torch.expm1, (U(-1, 1),)),
    Function("log", torch.log, (U(0.01, 100),)),
    Function("log2", torch.log2, (U(0.01, 100),)),
    Function("log10", torch.log10, (U(0.01, 100),)),
    Function("log1p", torch.log1p, (U(-0.9, 10),)),
    Function("logb", lambda x: torch.floor(torch.log2(x.abs())), (S,)),
    Function("ilogb", _ilogb, (S,), result=torch.int32),
    Function("sin", torch.sin, (U(-4, 4),)),
    Function("cos", torch.cos, (U(-4, 4),)),
    Function("tan", torch.tan, (U(-1.5, 1.5),)),
    Function("asin", torch.asin, (U(-0.99, 0.99),)),
    Function("acos", torch.acos, (U(-0.99, 0.99),)),
    Function("atan", torch.atan, (U(-10, 10),)),
    Function("atan2", torch.atan2, (U(-3, 3), U(-3, 3))),
    Function("sinh", torch.sinh, (U(-5, 5),)),
    Function("cosh", torch.cosh, (U(-5, 5),)),
    Function("tanh", torch.tanh, (U(-5, 5),)),
    Function("asinh", torch.asinh, (U(-5, 5),)),
    Function("acosh", torch.acosh, (U(1, 10),)),
    Function("atanh", torch.atanh, (U(-0.9, 0.9),)),
    Function("erf", torch.erf, (U(-3, 3),)),
    Function("erfc", torch.erfc, (U(-2, 2),)),
    Function("erfcx", torch.special.erfcx, (U(-1, 5),)),
    Function("erfinv", torch.erfinv, (U(-0.9, 0.9),)),
    Function("erfcinv", lambda x: torch.erfinv(1 - x), (U(0.1, 1.9),)),
    Function("normcdf", torch.special.ndtr, (U(-3, 3),)),
    Function("normcdfinv", torch.special.ndtri, (U(0.05, 0.95),)),
    Function("lgamma", torch.lgamma, (U(0.1, 6),)),
    Function("tgamma", lambda x: torch.exp(torch.lgamma(x)), (U(0.1, 6),)),
    Function("j0", _mpmath(lambda x: mpmath.besselj(0, x)), (U(-8, 8),)),
    Function("j1", _mpmath(lambda x: mpmath.besselj(1, x)), (U(-8, 8),)),
    Function("y0", _mpmath(lambda x: mpmath.bessely(0, x)), (U(0.5, 8),)),
    Function("y1", _mpmath(lambda x: mpmath.bessely(1, x)), (U(0.5, 8),)),
    Function("cyl_bessel_i0", torch.special.i0, (U(-5, 5),)),
    Function("cyl_bessel_i1", torch.special.i1, (U(-5, 5),)),
    Function("pow", torch.pow, (U(0.1, 4), U(-3, 3))),
    Function("pow", lambda x, n: torch.pow(x, n.double()), (U(-4, 4), INT)),  # powi: an int32 exponent
    Function("hypot", torch.hypot, (U(-4, 4), U(-4, 4))),
    Function("rhypot", lambda x, y: 1 / torch.hypot(x, y), (U(-4, 4), U(-4, 4))),
    Function("norm3d", lambda *xs: torch.stack(xs).norm(dim=0), (U(-4, 4),) * 3),
    Function("rnorm3d", lambda *xs: 1 / torch.stack(xs).norm(dim=0), (U(-4, 4),) * 3),
    Function("norm4d", lambda *xs: torch.stack(xs).norm(dim=0), (U(-4, 4),) * 4),
    Function("rnorm4d", lambda *xs: 1 / torch.stack(xs).norm(dim=0), (U(-4, 4),) * 4),
    Function("fmod", torch.fmod, (U(-10, 10), U(0.5, 3))),
    Function("fdim", lambda x, y: torch.clamp(x - y, min=0), (U(-4, 4), U(-4, 4))),
    Function("copysign", torch.copysign, (U(-4, 4), S)),
    Function("nextafter", torch.nextafter, (U(-4, 4), U(-4, 4)), in_float64=False),
    Function("ldexp", torch.ldexp, (U(1, 4), Domain(-6, 6, "integers"))),
    Function("scalbn", torch.ldexp, (U(1, 4), Domain(-6, 6, "integers"))),
    Function("fma", lambda x, y, z: x * y + z, (U(-4, 4),) * 3),
    Function("fma_rn", lambda x, y, z: x * y + z, (U(-4, 4),) * 3),
    Function("div_rn", torch.div, (U(-4, 4), U(0.5, 4))),
    Function("rcp_rn", torch.reciprocal, (U(0.1, 4),)),
    Function("add_rn", torch.add, (U(-4, 4), U(-4, 4))),
    Function("sub_rn", torch.sub, (U(-4, 4), U(-4, 4))),
    Function("mul_rn", torch.mul, (U(-4, 4), U(-4, 4))),
    Function("saturatef", lambda x: torch.nan_to_num(torch.clamp(x, 0, 1), nan=0.0), (S,), FLOAT32),
    Function("isnan", torch.isnan, (S,), result=torch.int32),
    Function("isinf", torch.isinf, (S,), result=torch.int32),
    Function("signbit", torch.signbit, (S,), result=torch.int32),
    Function("finitef", torch.isfinite, (S,), FLOAT32, result=torch.int32),
    Function("isfinited", torch.isfinite, (S,), (torch.float64,), result=torch.int32),
    Function("fast_expf", torch.exp, (U(-8, 8),), FLOAT32),
    Function("fast_exp10f", lambda x: torch.pow(10.0, x), (U(-3, 3),), FLOAT32),
    Function("fast_logf", torch.log, (U(0.01, 100),), FLOAT32),
    Function("fast_log2f", torch.log2, (U(0.01, 100),), FLOAT32),
    Function("fast_log10f", torch.log10, (U(0.01, 100),), FLOAT32),
    Function("fast_powf", torch.pow, (U(0.1, 4), U(-3, 3)), FLOAT32),
    Function("fast_sinf", torch.sin, (U(-4, 4),), FLOAT32),
    Function("fast_cosf", torch.cos, (U(-4, 4),), FLOAT32),
    Function("fast_tanf", torch.tan, (U(-1.5, 1.5),), FLOAT32),
    Function("fast_dividef", torch.div, (U(-4, 4), U(0.5, 4)), FLOAT32),
    Function("abs", torch.abs, (Domain(-(2**31), 2**31 - 1, "integers"),), (torch.int32, torch.int64)),
]
CASES = [
    pytest.param(f, dtype, n, id=f"{f.name}{'i' if INT in f.domains else ''}-{str(dtype)[6:]}-{n}")
    for f in FUNCTIONS
    for dtype in f.dtypes
    for n in (SIZES if dtype != torch.float64 else SIZES[-1:])  # float64 differs in its numbers only
]


def _launch(fn, args: list[torch.Tensor], out: torch.Tensor) -> None:
    padded = [*args, *args[:1] * (4 - len(args))]  # unused pointers: any tensor
    n = out.numel()
    _apply[(triton.cdiv(n, BLOCK),)](*padded, out, n, FN=fn, ARITY=len(args), BLOCK=BLOCK)


@needs_interpreter
@pytest.mark.parametrize("function,dtype,n", CASES)
def test_each_function_matches_torch(function: Function, dtype: torch.dtype, n: int):
    generator = torch.Generator().manual_seed(n)
    args = [d.draw(n, generator) for d in function.domains]
    args = [a.to(dtype) if a.is_floating_point() or not dtype.is_floating_point else a for a in args]
    result = function.result or dtype
    out = torch.full((n,), -7, dtype=result)  # poisoned: every element must be written
    _launch(getattr(libdevice, function.name), args, out)
    # The reference sees the values the kernel computes on: float16 is computed in float32.
    compute = torch.float32 if dtype == torch.float16 else dtype
    seen = [a.to(torch.float64 if function.in_float64 else compute) if a.is_floating_point() else a for a in args]
    expected = function.reference(*seen).to(result)
    if result.is_floating_point:
        rtol, atol = TOLERANCES[result]
        torch.testing.assert_close(out.double(), expected.double(), rtol=rtol, atol=atol, equal_nan=True)
    else:
        assert torch.equal(out, expected), (out, expected)


@needs_interpreter
@pytest.mark.parametrize("name", ["fma", "fma_rn"])
def test_float32_fma_rounds_once(name: str):
    """Where rounding x·y + z in float64 first, or the product in float32, would move the result."""
    x = y = torch.tensor([1 + 2**-12, 1 + 2**-12])  # x·y = 1 + 2^-11 + 2^-24, a tie of float32
    z = torch.tensor([2.0**-60, -(1 + 2**-11)])
    # just past the tie, rounded up; and the 2^-24 that rounding the product would lose
    expected = torch.tensor([1 + 2**-11 + 2**-23, 2.0**-24])
    out = torch.zeros(2)
    _launch(getattr(libdevice, name), [x, y, z], out)
    assert torch.equal(out, expected), out


@triton.jit
def _gelu_tanh(x):
    """A helper the kernel calls, as Liger's kernels do."""
    return 0.5 * x * (1 + libdevice.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


@triton.jit
def _each_way(x_ptr, out_ptr, n, HALF: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, libdevice.tanh(x), mask=mask)  # triton.language.extra's dispatching module
    tl.store(out_ptr + n + offsets, cuda_libdevice.tanh(x), mask=mask)
    tl.store(out_ptr + 2 * n + offsets, tl.extra.cuda.libdevice.tanh(x), mask=mask)
    tl.store(out_ptr + 3 * n + offsets, _gelu_tanh(x), mask=mask)
    # Python numbers and a constexpr as arguments: Triton's table makes 3 an int32 (powi), 2.0 a float32
    tl.store(out_ptr + 4 * n + offsets, libdevice.pow(x, 3) + libdevice.pow(x, 2.0) + libdevice.pow(x, HALF), mask=mask)
    tl.store(out_ptr + 5 * n + offsets, libdevice.rsqrt(tl.sum(x * x, axis=0)) + 0 * x, mask=mask)  # of a scalar


@needs_interpreter
@pytest.mark.parametrize("n", SIZES)
def test_each_way_a_kernel_reaches_libdevice(n: int):
    x = torch.rand(n, generator=torch.Generator().manual_seed(n)) + 0.5
    out = torch.full((6, n), float("nan"))
    _each_way[(1,)](x, out, n, HALF=0.5, BLOCK=256)
    x64 = x.double()
    tanh = torch.tanh(x64)
    expected = [
        tanh,
        tanh,
        tanh,
        torch.nn.functional.gelu(x64, approximate="tanh"),
        x64**3 + x64**2 + x64**0.5,
        torch.rsqrt((x64 * x64).sum()).expand(n),
    ]
    torch.testing.assert_close(out.double(), torch.stack(expected), rtol=4 * 2**-23, atol=0)  # a few roundings


@triton.jit
def _tanh(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, libdevice.tanh(tl.load(x_ptr + offsets)))


@needs_interpreter
def test_triton_still_decides_which_dtypes_a_function_takes():
    """libdevice's tanh has no float16 form: a GPU refuses to compile the call, and so does this."""
    x = torch.rand(16, dtype=torch.float16)
    with pytest.raises(triton.runtime.errors.InterpreterError, match="float16"):
        _tanh[(1,)](x, torch.empty_like(x), BLOCK=16)
    _tanh[(1,)](x.float(), torch.empty_like(x.float()), BLOCK=16)


@needs_interpreter
@pytest.mark.parametrize(
    "name,said",
    [
        ("div_rz", "__nv_fdiv_rz has no implementation in Triton"),
        ("fast_tanhf", "fast_tanhf exists only for AMD GPUs"),
    ],
)
def test_a_function_without_numbers_says_so(name: str, said: str):
    x = torch.rand(8) + 1
    arity = 2 if name == "div_rz" else 1
    with pytest.raises(triton.runtime.errors.InterpreterError, match=said) as raised:
        _launch(getattr(libdevice, name), [x] * arity, torch.empty_like(x))
    if name == "div_rz":
        assert "perfbot check --device cuda" in str(raised.value)


@needs_interpreter
def test_installing_again_changes_nothing():
    before = (libdevice.tanh, cuda_libdevice.tanh)
    install()
    assert (libdevice.tanh, cuda_libdevice.tanh) == before


PROBE = """
import triton.language.extra.libdevice as dispatching
import triton.language.extra.cuda.libdevice as cuda
from triton.runtime.interpreter import InterpreterBuilder
from perfbot.measuring.interpreted_libdevice import install
def state():
    return dispatching.tanh, cuda.tanh, InterpreterBuilder.create_extern_elementwise
before = state()
install()
print("unchanged" if state() == before else "changed")
"""


def _environment(**extra: str) -> dict[str, str]:
    """A process of its own, where nothing chose the interpreter yet, importing this checkout's perfbot."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return {**env, **extra}


@pytest.mark.parametrize("interpret,said", [(None, "unchanged"), ("0", "unchanged"), ("1", "changed")])
def test_only_the_interpreter_is_changed(interpret: str | None, said: str):
    """A compiled kernel must meet the real libdevice: without TRITON_INTERPRET=1, nothing changes."""
    env = _environment() if interpret is None else _environment(TRITON_INTERPRET=interpret)
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == said


SUBJECT = """
import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice
from triton.language.extra.libdevice import tanh

from perfbot import Case, Subject, Suite


@triton.jit
def _kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    # y = tanh(x) / sqrt(1 + x^2)
    y = tanh(x) * libdevice.rsqrt(1 + x * x)
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


def make_inputs(case, generator):
    x = 3 * torch.randn(case.n, generator=generator, device=generator.device)
    return (x.to(getattr(torch, case.dtype)),)


def float64(x):
    x = x.double()
    return torch.tanh(x) * torch.rsqrt(1 + x * x)


QUICK = (
    Case("quick", "one", {"n": 1}, "float32"),
    Case("quick", "odd", {"n": 37}, "float16"),
    Case("quick", "blocks", {"n": 129}, "float32"),
)
subject = Subject(
    name="act",
    inputs=make_inputs,
    reference=float64,
    tolerance={"float32": 1e-6, "float16": 1e-3},
    suites={"quick": Suite("quick", "small, for perfbot check without a GPU", ("triton", "torch"), QUICK)},
)


@subject.implementation("triton", under_test=True)
def triton_act(x):
    y = torch.empty_like(x)
    _kernel[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), BLOCK=64)
    return y


@subject.implementation("torch")
def torch_act(x):
    return (float64(x)).to(x.dtype)
"""


@pytest.mark.slow
def test_check_runs_a_kernel_that_calls_libdevice_on_the_cpu(tmp_path: Path):
    """As a user runs it: the check chooses the interpreter and gives it libdevice before the subject
    imports `tanh` by name; without that, every triton row raises and the check exits 1."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.perfbot]\ntriton-commit = "7c56a5e40f7fd928dfd5c72902d5def0097db73a"\nkernels = "act"\n'
    )
    (tmp_path / "act").mkdir()
    (tmp_path / "act" / "__init__.py").write_text(textwrap.dedent(SUBJECT))
    done = subprocess.run(
        [sys.executable, "-m", "perfbot", "check", "--device", "cpu"],
        cwd=tmp_path,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "perfbot check: act on cpu" in done.stdout
    assert "6 right, 0 wrong, of 6" in done.stdout


def test_the_docs_list_the_functions_tested():
    """docs/subject.md's table says which functions work on the CPU: each one tested, and no other."""
    page = (ROOT / "docs" / "subject.md").read_text()
    section = page.split("## Kernels that call libdevice\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[2] for line in section.splitlines() if line.startswith("| ") and "`" in line]
    listed = [name for row in rows for name in re.findall(r"`(\w+)`", row)]
    assert sorted(listed) == sorted({f.name for f in FUNCTIONS})
