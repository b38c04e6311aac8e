"""libdevice in Triton's interpreter, so that `perfbot check` on the CPU runs a kernel that calls
`triton.language.extra.libdevice` (or its `cuda` module) as it is written.

Triton's interpreter gives a launch working `tl`, `tl.core` and `tl.math`, and nothing else. A
libdevice call there reaches one of two modules. The dispatching one holds stubs that return None
(on a GPU the compiler swaps it for the backend's module); the CUDA one holds builtins that refuse
a call without the `_semantic` the interpreter hands only to its own modules. Below both, the
interpreter's builder cannot make an external call at all.

Where TRITON_INTERPRET=1, `install` makes both modules' functions call the CUDA module's with the
interpreter's semantic, so that Triton's own table of argument dtypes, broadcasting and result
dtypes still decides each call, and gives the builder the numbers, by libdevice symbol: each
function evaluated in float64 (float32 and float64 alike) and rounded once to the result's dtype.
That is as accurate as the GPU's libdevice or more; the `fast_` variants too, so a fast variant
too inexact for a kernel passes on the CPU. Which functions have numbers: docs/subject.md,
"Kernels that call libdevice"; any other raises, naming itself.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from typing import Any

import numpy as np

Array = Any  # a numpy array: the data of one of the interpreter's tensors
Numbers = Callable[..., Array]

INT32_MIN, INT32_MAX = np.iinfo(np.int32).min, np.iinfo(np.int32).max


def _round_half_away(x: Array) -> Array:
    whole = np.trunc(x)
    return np.where(np.abs(x - whole) >= 0.5, whole + np.copysign(1.0, x), whole)


def _saturate(x: Array) -> Array:
    return np.where(np.isnan(x), 0.0, np.clip(x, 0.0, 1.0))  # CUDA's saturatef takes NaN to 0


def _fdim(x: Array, y: Array) -> Array:
    return np.where(x > y, x - y, np.where(np.isnan(x) | np.isnan(y), np.nan, 0.0))


def _logb(x: Array) -> Array:
    exponent = np.frexp(x)[1] - 1.0
    return np.where(np.isfinite(x) & (x != 0), exponent, np.where(x == 0, -np.inf, np.abs(x)))


def _ilogb(x: Array) -> Array:
    exponent = np.frexp(x)[1] - 1
    # CUDA's: INT_MIN for zero and NaN, INT_MAX for the infinities
    return np.where(np.isfinite(x) & (x != 0), exponent, np.where(np.isinf(x), INT32_MAX, INT32_MIN))


def _fma_float32(x: Array, y: Array, z: Array) -> Array:
    """x·y + z rounded once, as on the GPU. The product of two float32 is exact in float64 and the
    sum's error is found exactly (TwoSum); rounding the sum to odd first makes its two roundings
    one (Boldo and Melquiond, "Emulation of FMA and correctly rounded sums", 2008)."""
    product = x.astype(np.float64) * y
    total = product + z
    back = total - product
    error = (product - (total - back)) + (z - back)
    even = (total.view(np.int64) & 1) == 0
    toward = np.where(error > 0, np.inf, -np.inf)
    return np.where(np.isfinite(total) & (error != 0) & even, np.nextafter(total, toward), total)


def _special(name: str) -> Numbers:
    """scipy.special's function `name`, imported at its first call: scipy takes half a second to
    import, in every process that loads perfbot's measuring code, and few kernels call these."""

    def evaluate(*args: Array) -> Array:
        from scipy import special

        return getattr(special, name)(*args)

    return evaluate


def _norm(*xs: Array) -> Array:
    total = xs[0]
    for x in xs[1:]:
        total = np.hypot(total, x)  # as libdevice does, without overflowing in the squares
    return total


# Functions whose float32 symbol is __nv_{name}f and float64 symbol __nv_{name}.
_MATH: dict[str, Numbers] = {
    "fabs": np.abs,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "round": _round_half_away,
    "rint": np.rint,
    "nearbyint": np.rint,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "cbrt": np.cbrt,
    "rcbrt": lambda x: 1.0 / np.cbrt(x),
    "exp": np.exp,
    "exp2": np.exp2,
    "exp10": lambda x: np.power(10.0, x),
    "expm1": np.expm1,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "logb": _logb,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "atan2": np.arctan2,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "erf": _special("erf"),
    "erfc": _special("erfc"),
    "erfcx": _special("erfcx"),
    "erfinv": _special("erfinv"),
    "erfcinv": _special("erfcinv"),
    "normcdf": _special("ndtr"),
    "normcdfinv": _special("ndtri"),
    "lgamma": _special("gammaln"),
    "tgamma": _special("gamma"),
    "j0": _special("j0"),
    "j1": _special("j1"),
    "y0": _special("y0"),
    "y1": _special("y1"),
    "cyl_bessel_i0": _special("i0"),
    "cyl_bessel_i1": _special("i1"),
    "pow": np.power,
    "powi": np.power,  # an int32 exponent
    "hypot": np.hypot,
    "rhypot": lambda x, y: 1.0 / np.hypot(x, y),
    "norm3d": _norm,
    "rnorm3d": lambda *xs: 1.0 / _norm(*xs),
    "norm4d": _norm,
    "rnorm4d": lambda *xs: 1.0 / _norm(*xs),
    "fmod": np.fmod,
    "fdim": _fdim,
    "copysign": np.copysign,
    "ldexp": np.ldexp,  # an int32 exponent
    "scalbn": np.ldexp,
}
# Rounded to nearest, whose float32 symbol is __nv_f{name} and float64 symbol __nv_d{name}: from
# float64, one rounding to float32 is the correctly rounded result of these five.
_ROUNDED: dict[str, Numbers] = {
    "div_rn": np.divide,
    "rcp_rn": np.reciprocal,
    "sqrt_rn": np.sqrt,
    "add_rn": np.add,
    "sub_rn": np.subtract,
    "mul_rn": np.multiply,
}
# Float32 only, __nv_fast_{name}: on the GPU approximations, here the full-precision function.
_FAST: dict[str, Numbers] = {
    "expf": np.exp,
    "exp10f": lambda x: np.power(10.0, x),
    "logf": np.log,
    "log2f": np.log2,
    "log10f": np.log10,
    "powf": np.power,
    "sinf": np.sin,
    "cosf": np.cos,
    "tanf": np.tan,
    "fdividef": np.divide,
}
# Tests of a float, and its exponent: int32 results.
_TESTS: dict[str, Numbers] = {
    "__nv_isnanf": np.isnan,
    "__nv_isnand": np.isnan,
    "__nv_isinff": np.isinf,
    "__nv_isinfd": np.isinf,
    "__nv_signbitf": np.signbit,
    "__nv_signbitd": np.signbit,
    "__nv_finitef": np.isfinite,
    "__nv_isfinited": np.isfinite,
    "__nv_ilogbf": _ilogb,
    "__nv_ilogb": _ilogb,
}
# Evaluated in the arguments' own dtype: integers, a step to the next float of that dtype, and
# float32's fma.
_AS_GIVEN: dict[str, Numbers] = {
    "__nv_abs": np.abs,
    "__nv_llabs": np.abs,
    "__nv_nextafterf": np.nextafter,
    "__nv_nextafter": np.nextafter,
    "__nv_fmaf": _fma_float32,
    "__nv_fmaf_rn": _fma_float32,
}
# Float64's fma is the interpreter's own tl.fma: rounded once from Triton 3.9 on, twice before.
_FMA_FLOAT64 = {"__nv_fma", "__nv_fma_rn"}


def _in_float64(function: Numbers) -> Numbers:
    def evaluate(*args: Array) -> Array:
        return function(*(a.astype(np.float64) if a.dtype.kind == "f" else a for a in args))

    return evaluate


SYMBOLS: dict[str, Numbers] = {
    **{symbol: _in_float64(f) for name, f in _MATH.items() for symbol in (f"__nv_{name}f", f"__nv_{name}")},
    **{f"__nv_{kind}{name}": _in_float64(f) for name, f in _ROUNDED.items() for kind in "fd"},
    "__nv_frsqrt_rn": _in_float64(_MATH["rsqrt"]),
    **{f"__nv_fast_{name}": _in_float64(f) for name, f in _FAST.items()},
    "__nv_saturatef": _in_float64(_saturate),
    **{symbol: _in_float64(f) for symbol, f in _TESTS.items()},
    **_AS_GIVEN,
}

NO_NUMBERS = (
    "libdevice's {symbol} has no implementation in Triton's interpreter (perfbot's list: "
    'docs/subject.md, "Kernels that call libdevice"); check this kernel on a GPU: perfbot check --device cuda'
)


def _extern_elementwise(
    builder: Any, lib_name: str, lib_path: str, symbol: str, args: list[Any], ret_type: Any, is_pure: bool
) -> Any:
    """The interpreter builder's `create_extern_elementwise`: the numbers of `symbol` on the
    arguments' handles, already broadcast to one shape and checked against Triton's table."""
    from triton.runtime.interpreter import TensorHandle, _get_np_dtype

    if symbol in _FMA_FLOAT64:
        return builder.create_fma(*args)
    if symbol not in SYMBOLS:
        raise NotImplementedError(NO_NUMBERS.format(symbol=symbol))
    dtype = ret_type.scalar
    with np.errstate(all="ignore"):  # a NaN or an infinity is a value here, as on the GPU
        result = SYMBOLS[symbol](*(a.data for a in args))
        return TensorHandle(np.asarray(result).astype(_get_np_dtype(dtype)), dtype)


def _interpreted(function: Callable[..., Any], semantic: Any) -> Callable[..., Any]:
    """The CUDA module's builtin `function`, called as the interpreter calls its own modules'."""

    @functools.wraps(function, updated=())  # not its __dict__: the copy is no builtin of a compiler's
    def call(*args: Any, _semantic: Any = None, **kwargs: Any) -> Any:
        return function(*args, _semantic=semantic, **kwargs)

    return call


def _absent(name: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"libdevice's {name} exists only for AMD GPUs (triton.language.extra.hip)")

    return call


def install() -> None:
    """Give Triton's interpreter libdevice's functions, where TRITON_INTERPRET=1 (elsewhere the
    compiler uses the real libdevice, and nothing is changed). Call it before the subject is
    imported: a kernel's module that imported a function by name (`from
    triton.language.extra.libdevice import rsqrt`) keeps what it found then. Once is enough."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return
    try:
        from triton.language import core
        from triton.language.extra import libdevice as dispatching
        from triton.language.extra.cuda import libdevice as cuda
        from triton.runtime import interpreter
    except ImportError:  # no Triton: no kernel of it to run
        return
    if interpreter.InterpreterBuilder.create_extern_elementwise is _extern_elementwise:
        return
    interpreter.InterpreterBuilder.create_extern_elementwise = _extern_elementwise
    for name, function in list(vars(dispatching).items()):
        if inspect.isfunction(function) and not core.is_builtin(getattr(cuda, name, None)):
            setattr(dispatching, name, _absent(name))
    for name, function in list(vars(cuda).items()):
        if core.is_builtin(function):
            interpreted = _interpreted(function, interpreter.interpreter_semantic)
            setattr(cuda, name, interpreted)
            setattr(dispatching, name, interpreted)
