"""`perfbot init` on the wrappers kernel libraries call (Liger-Kernel, unsloth): a
`torch.autograd.Function`, called through its apply with the arguments of its forward after ctx,
and an `nn.Module`, built with its constructor's arguments and called with those of its forward.
A generated library with a Triton kernel behind each: init's skeletons pass `perfbot check`
once only their marked places are written. Which classes are which, read from their bases as
written; the names of the family and its implementation; the specs refused."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

from perfbot.adopting import kernel_source
from perfbot.adopting.kernel_source import Constructor
from perfbot.loading.package import load_subject
from tests.test_init import SHA, _check, _fill, _init
from tests.test_runner_cpu import _git

SOFTMAX = '''\
"""Row softmax in Triton: y = exp(x - max x) / sum exp(x - max x), one program per row, called
through a torch.autograd.Function (forward and backward), as kernel libraries do."""

import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offsets = tl.arange(0, BLOCK)
    inside = offsets < cols
    x = tl.load(x_ptr + row * stride + offsets, mask=inside, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * stride + offsets, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=inside)


class SoftmaxFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, block: int = 0) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        block = block or triton.next_power_of_2(x.shape[-1])
        _softmax_kernel[(x.shape[0],)](x, y, x.stride(0), x.shape[-1], BLOCK=block)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (y,) = ctx.saved_tensors
        return y * (grad - (grad * y).sum(-1, keepdim=True)), None
'''
RMSNORM_FUNCTION = '''\
"""RMSNorm in Triton: y = x / sqrt(mean(x^2) + eps) * weight, one program per row."""

import torch
import triton
import triton.language as tl
from torch.autograd import Function


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, y_ptr, stride, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offsets = tl.arange(0, BLOCK)
    inside = offsets < cols
    x = tl.load(x_ptr + row * stride + offsets, mask=inside, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / cols + eps)
    tl.store(y_ptr + row * stride + offsets, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=inside)


class RMSNormFunction(Function):
    @staticmethod
    def forward(ctx, x, weight, eps):
        x = x.contiguous()
        y = torch.empty_like(x)
        block = triton.next_power_of_2(x.shape[-1])
        _rmsnorm_kernel[(x.shape[0],)](x, weight, y, x.stride(0), x.shape[-1], eps, BLOCK=block)
        return y
'''
LAYERS = '''\
"""The layers a model builds: RMSNorm, its weight of hidden_size ones."""

import torch
import torch.nn as nn

from .ops.rmsnorm import RMSNormFunction


class RMSNorm(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.eps = eps

    def forward(self, x):
        if self.weight.shape != (x.shape[-1],) or self.weight.dtype != x.dtype or self.weight.device != x.device:
            raise ValueError(
                f"RMSNorm: the weight is {tuple(self.weight.shape)} {self.weight.dtype} on {self.weight.device}, "
                f"x is {tuple(x.shape)} {x.dtype} on {x.device}"
            )
        return RMSNormFunction.apply(x, self.weight, self.eps)
'''
REFERENCE = '    raise NotImplementedError("perfbot init: write the float64 reference")\n'
BASELINE = '    raise NotImplementedError("perfbot init: write the PyTorch baseline")\n'
CONSTRUCTOR = '    raise NotImplementedError("perfbot init: write RMSNorm\'s constructor arguments")\n'
# What a user writes into the places init marked, per family: each marked line replaced.
FILLED = {
    "softmax": {
        REFERENCE: "    return torch.softmax(x.double(), dim=-1)\n",
        BASELINE: "    return torch.softmax(x, dim=-1)\n",
    },
    "rms_norm": {
        REFERENCE: "    x = x.double()\n    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)\n",
        BASELINE: "    return torch.nn.functional.rms_norm(x, (x.shape[-1],), None, 1e-5)\n",
    },
}
CONSTRUCTED = {CONSTRUCTOR: "    return RMSNorm(x.shape[-1], eps=1e-5)\n"}
# The cases, tiny (Triton's interpreter is slow): a shape in two dtypes, and another shape.
TINY = {
    "    - {name: small, rows: 4, cols: 64}\n    - {name: odd, rows: 37, cols: 200, dtype: float16}\n": (
        "    - {name: small, rows: 3, cols: 16}\n"
        "    - {name: half, rows: 3, cols: 16, dtype: float16}\n"
        "    - {name: odd, rows: 5, cols: 41, dtype: float16}\n"
    )
}


@pytest.fixture
def library(tmp_path: Path) -> Path:
    """A kernel library of a src/ layout, one commit, no perfbot: a softmax called through an
    autograd.Function that the package re-exports, and RMSNorm, an nn.Module whose forward calls
    an autograd.Function of another module."""
    root = tmp_path / "library"
    package = root / "src" / "mylib"
    (package / "ops").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "mylib"\nversion = "0.1"\n')
    (package / "__init__.py").write_text("from .softmax import SoftmaxFunction\n")
    (package / "softmax.py").write_text(SOFTMAX)
    (package / "layers.py").write_text(LAYERS)
    (package / "ops" / "__init__.py").write_text("")
    (package / "ops" / "rmsnorm.py").write_text(RMSNORM_FUNCTION)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "kernels")
    return root


def test_an_autograd_function_and_a_module_pass_the_check_once_their_marked_places_are_written(library: Path):
    first = _init(library, "--kernel", "mylib:SoftmaxFunction.apply", "--name", "softmax", "--triton-commit", SHA)
    assert first.exit_code == 0, first.output
    second = _init(library, "--kernel", "mylib.layers:RMSNorm")
    assert second.exit_code == 0, second.output
    assert "         from .rms_norm import subject as rms_norm" in second.output.splitlines()
    softmax, rmsnorm = library / "perf" / "softmax" / "__init__.py", library / "perf" / "rms_norm" / "__init__.py"
    written = softmax.read_text()
    assert "from mylib import SoftmaxFunction\n" in written  # as the package re-exports it
    assert "    # SoftmaxFunction.apply(x: torch.Tensor, block: int=0)\n" in written  # forward's, after ctx
    assert '@subject.implementation("softmax", under_test=True)\ndef under_test(x)' in written
    assert "    return SoftmaxFunction.apply(x)\n" in written
    written = rmsnorm.read_text()
    assert "from mylib.layers import RMSNorm\n" in written
    assert "    # RMSNorm(hidden_size: int, eps: float=1e-06)\n" in written  # __init__'s, after self
    assert '@subject.implementation("rms_norm", under_test=True)\ndef under_test(x)' in written
    assert "    return built(x)(x)\n" in written
    # SoftmaxFunction defines a backward, RMSNorm's Function none: the softmax's suites time both ways.
    suites = {family: (library / "perf" / family / "suites.yaml").read_text() for family in ("softmax", "rms_norm")}
    assert (
        suites["softmax"].count("  mode: [forward, backward]\n") == 2
        and "# SoftmaxFunction defines a backward" in suites["softmax"]
    )
    assert "mode:" not in suites["rms_norm"]
    for family, path in (("softmax", softmax), ("rms_norm", rmsnorm)):
        _fill(path, FILLED[family])
        _fill(path.with_name("suites.yaml"), TINY)
    with open(library / "perf" / "__init__.py", "a") as families:
        families.write("from .rms_norm import subject as rms_norm\nsubjects.append(rms_norm)\n")
    # The constructor's arguments unwritten: the module is not built, and the check fails naming them.
    unbuilt = _check(library)
    assert unbuilt.exit_code == 1, unbuilt.output
    assert "15 right, 3 wrong, of 18" in unbuilt.stdout  # the softmax's 6 rows of 3 cases, and as many backward
    assert "NotImplementedError: perfbot init: write RMSNorm's constructor arguments" in unbuilt.stdout
    # Built once per device, dtype and shape of x (RMSNorm's forward checks its weight against x).
    _fill(rmsnorm, CONSTRUCTED)
    checked = _check(library)
    assert checked.exit_code == 0, checked.output
    assert "perfbot check: softmax+rms_norm on cpu" in checked.stdout and "18 right, 0 wrong, of 18" in checked.stdout
    assert "softmax/softmax" in checked.stdout and "rms_norm/rms_norm" in checked.stdout
    assert "softmax/softmax[backward]" in checked.stdout and "rms_norm/rms_norm[backward]" not in checked.stdout
    # The library's files are the implementations' code, through apply and through the module built.
    loaded = load_subject(library / "perf")
    sources = loaded.sources.recorded()
    assert "src/mylib/softmax.py" in sources["softmax/softmax"]
    assert {"src/mylib/layers.py", "src/mylib/ops/rmsnorm.py"} <= set(sources["rms_norm/rms_norm"])
    assert "src/mylib/layers.py" not in sources["rms_norm/torch"]
    # One module per device, dtype and shape, built at the first call and kept: never built in a timed call.
    built = loaded.implementations["rms_norm/rms_norm"].fn.__globals__["built"]
    x = torch.zeros(3, 16)
    assert built(x) is built(torch.ones(3, 16)) and built(x) is not built(x.half())
    assert built(x) is not built(torch.zeros(3, 17)) and built(x).weight.shape == (16,)


# --- which classes are which -----------------------------------------------------------------------

FORWARD = "    @staticmethod\n    def forward(ctx, x, weight=None):\n        return x\n"
AUTOGRAD_BASES = {
    "torch.autograd.Function": "import torch\n",
    "Function": "from torch.autograd import Function\n",
    "F": "from torch.autograd.function import Function as F\n",
    "autograd.Function": "from torch import autograd\n",
    "ag.Function": "import torch.autograd as ag\n",
    "torch.autograd.function.InplaceFunction": "import torch.autograd.function\n",
    "Base": "import torch\n\n\nclass Base(torch.autograd.Function):\n    pass\n",  # the project's own, here
    "base.Base": "from . import base\n",  # the project's own, in another module
    "Imported": "from .base import Base as Imported\n",
}
MODULE_BASES = {
    "nn.Module": "import torch.nn as nn\n",
    "torch.nn.Module": "import torch\n",
    "Module": "from torch.nn import Module\n",
    "nn.Module ": "from torch import nn\n",
    "torch.nn.modules.module.Module": "import torch.nn.modules.module\n",
    "torch.nn.modules.linear.Linear": "import torch.nn.modules.linear\n",
    "nn.LayerNorm": "import torch.nn as nn\n",
}


def _library(tmp_path: Path, source: str) -> Path:
    ops = tmp_path / "src" / "mypkg"
    ops.mkdir(parents=True, exist_ok=True)
    (ops / "__init__.py").write_text("")
    (ops / "base.py").write_text("import torch\n\n\nclass Base(torch.autograd.Function):\n    pass\n")
    (ops / "ops.py").write_text(source)
    return tmp_path


@pytest.mark.parametrize("base", sorted(AUTOGRAD_BASES))
@pytest.mark.parametrize("apply", ["", ".apply"])
def test_an_autograd_function_is_known_by_its_bases_and_called_through_apply(tmp_path: Path, base: str, apply: str):
    root = _library(tmp_path, f"{AUTOGRAD_BASES[base]}\n\nclass Scale({base}):\n{FORWARD}")
    kernel = kernel_source.find_kernel(root, f"mypkg.ops:Scale{apply}")
    assert (kernel.kind, kernel.function, kernel.parameters) == ("autograd", "Scale", ("x",))
    assert kernel.signature == "Scale.apply(x, weight=None)"


@pytest.mark.parametrize("base", sorted(MODULE_BASES))
def test_a_module_is_known_by_its_bases_and_built_with_its_constructors_arguments(tmp_path: Path, base: str):
    init = "    def __init__(self, hidden_size, eps=1e-06, *, mode, bias=True):\n        super().__init__()\n"
    forward = "    def forward(self, x, residual=None):\n        return x\n"
    root = _library(tmp_path, f"{MODULE_BASES[base]}\n\nclass Norm({base.strip()}):\n{init}\n{forward}")
    kernel = kernel_source.find_kernel(root, "mypkg.ops:Norm")
    assert (kernel.kind, kernel.parameters, kernel.signature) == ("module", ("x",), "Norm.forward(x, residual=None)")
    assert kernel.constructor == Constructor(
        "Norm(hidden_size, eps=1e-06, *, mode, bias=True)", ("hidden_size", "mode")
    )


def test_a_forward_without_ctx_beside_setup_context_passes_every_argument(tmp_path: Path):
    source = (
        "import torch\n\n\nclass Scale(torch.autograd.Function):\n"
        "    @staticmethod\n    def forward(x, factor):\n        return x * factor\n\n"
        "    @staticmethod\n    def setup_context(ctx, inputs, output):\n        pass\n"
    )
    kernel = kernel_source.find_kernel(_library(tmp_path, source), "mypkg.ops:Scale.apply")
    assert kernel.parameters == ("x", "factor") and kernel.signature == "Scale.apply(x, factor)"


def test_methods_come_from_the_projects_base_class_where_the_class_defines_none(tmp_path: Path):
    source = (
        "import torch.nn as nn\n\n\nclass Norm(nn.Module):\n"
        "    def __init__(self, hidden_size):\n        super().__init__()\n\n"
        "    def forward(self, x, weight):\n        return x\n\n\nclass RMSNorm(Norm):\n    pass\n"
    )
    kernel = kernel_source.find_kernel(_library(tmp_path, source), "mypkg.ops:RMSNorm")
    assert kernel.kind == "module" and kernel.parameters == ("x", "weight")
    assert kernel.constructor == Constructor("RMSNorm(hidden_size)", ("hidden_size",))


@pytest.mark.parametrize(
    "source,constructor",
    [
        ("import torch.nn as nn\n\n\nclass Norm(nn.Module):\n    pass\n", Constructor("Norm()", ())),
        ("import torch.nn as nn\n\n\nclass Norm(nn.Linear):\n    pass\n", Constructor("Norm(...)", None)),
    ],
)
def test_a_constructor_inherited_from_torch_is_nn_modules_or_not_read(tmp_path: Path, source: str, constructor):
    root = _library(tmp_path, source)
    kernel = kernel_source.find_kernel(root, "mypkg.ops:Norm")
    assert kernel.kind == "module" and kernel.constructor == constructor
    assert kernel.parameters is None and kernel.signature == "Norm.forward(...)"  # torch's forward: not read
    result = _init(root, "--kernel", "mypkg.ops:Norm", "--triton-commit", SHA)
    assert result.exit_code == 0, result.output
    assert "note: Norm.forward(...): its arguments are not in" in result.output
    written = (root / "perf" / "norm" / "__init__.py").read_text()
    ast.parse(written)
    assert "def under_test(*inputs) -> torch.Tensor:" in written and "    return built(inputs[0])(*inputs)\n" in written
    # Only a constructor that takes arguments, or one not read, stops the check until written.
    stop = '    raise NotImplementedError("perfbot init: write Norm\'s constructor arguments")\n'
    assert (stop in written) == (constructor.required != ())
    assert ("    return Norm()\n" in written) == (constructor.required == ())


def test_forward_arguments_named_as_the_module_builders_are_renamed(tmp_path: Path):
    source = (
        "import torch.nn as nn\n\n\nclass Norm(nn.Module):\n    def forward(self, built, key):\n        return built\n"
    )
    root = _library(tmp_path, source)
    assert _init(root, "--kernel", "mypkg.ops:Norm", "--triton-commit", SHA).exit_code == 0
    written = (root / "perf" / "norm" / "__init__.py").read_text()
    assert (
        "def under_test(built_, key_) -> torch.Tensor:\n" in written and "return built(built_)(built_, key_)" in written
    )
    assert "def built(built_: torch.Tensor) -> Norm:" in written


def test_a_name_bound_to_an_autograd_functions_apply_is_called_with_its_forwards_arguments(tmp_path: Path):
    source = f"import torch\n\n\nclass _Scale(torch.autograd.Function):\n{FORWARD}\n\nscale = _Scale.apply\n"
    kernel = kernel_source.find_kernel(_library(tmp_path, source), "mypkg.ops:scale")
    assert (kernel.kind, kernel.parameters, kernel.signature) == ("function", ("x",), "scale(x, weight=None)")
    assert not kernel.backward


BACKWARD = "\n    @staticmethod\n    def backward(ctx, grad):\n        return grad, None\n"


@pytest.mark.parametrize(
    ("source", "spec"),
    [
        (f"import torch\n\n\nclass Scale(torch.autograd.Function):\n{FORWARD}{BACKWARD}", "mypkg.ops:Scale"),
        (f"import torch\n\n\nclass Scale(torch.autograd.Function):\n{FORWARD}{BACKWARD}", "mypkg.ops:Scale.apply"),
        (
            f"import torch\n\n\nclass _Scale(torch.autograd.Function):\n{FORWARD}{BACKWARD}\n\nscale = _Scale.apply\n",
            "mypkg.ops:scale",
        ),
        (  # the backward of the project's base class
            f"import torch\n\n\nclass B(torch.autograd.Function):\n{BACKWARD}\n\nclass Scale(B):\n{FORWARD}",
            "mypkg.ops:Scale",
        ),
    ],
)
def test_an_autograd_function_with_a_backward_is_measured_both_ways(tmp_path: Path, source: str, spec: str):
    root = _library(tmp_path, source)
    assert kernel_source.find_kernel(root, spec).backward
    result = _init(root, "--kernel", spec, "--triton-commit", SHA)
    assert result.exit_code == 0, result.output
    (suites,) = (root / "perf").glob("*/suites.yaml")
    assert suites.read_text().count("  mode: [forward, backward]\n") == 2


def test_a_module_that_takes_no_constructor_arguments_is_built_without_a_stop(tmp_path: Path):
    source = "import torch.nn as nn\n\n\nclass Double(nn.Module):\n    def forward(self, x):\n        return 2 * x\n"
    root = _library(tmp_path, source)
    assert _init(root, "--kernel", "mypkg.ops:Double", "--triton-commit", SHA).exit_code == 0
    written = (root / "perf" / "double" / "__init__.py").read_text()
    ast.parse(written)
    assert "    # Double()\n    return Double()\n" in written and 'constructor arguments")' not in written


# --- names -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cls,name",
    [
        ("SoftmaxAutoGrad", "softmax_auto_grad"),
        ("LigerRMSNorm", "liger_rms_norm"),
        ("Fast_RMS_Layernorm", "fast_rms_layernorm"),
        ("_Attention", "attention"),
        ("GELU2", "gelu2"),
    ],
)
def test_a_class_names_its_family_in_lower_case_words(tmp_path: Path, cls: str, name: str):
    root = _library(tmp_path, f"import torch\n\n\nclass {cls}(torch.autograd.Function):\n{FORWARD}")
    assert kernel_source.find_kernel(root, f"mypkg.ops:{cls}.apply").default_name == name


@pytest.mark.parametrize(
    "args,folder,implementation",
    [
        (["--name", "softmax"], "softmax", "softmax"),
        ([], "softmax_auto_grad", "softmax_auto_grad"),
    ],
)
def test_the_implementation_is_named_after_the_name_given_else_after_the_class(
    tmp_path: Path, args: list[str], folder: str, implementation: str
):
    root = _library(tmp_path, f"import torch\n\n\nclass SoftmaxAutoGrad(torch.autograd.Function):\n{FORWARD}")
    result = _init(root, "--kernel", "mypkg.ops:SoftmaxAutoGrad.apply", "--triton-commit", SHA, *args)
    assert result.exit_code == 0, result.output
    written = (root / "perf" / folder / "__init__.py").read_text()
    assert f'    name="{folder}",\n' in written
    assert f'@subject.implementation("{implementation}", under_test=True)' in written
    assert f'implementations: ["{implementation}", "torch"]' in (root / "perf" / folder / "suites.yaml").read_text()


# --- what is refused ---------------------------------------------------------------------------------

CLASSES = (
    f"import torch\nimport torch.nn as nn\n\n\nclass Scale(torch.autograd.Function):\n{FORWARD}\n\n"
    "class Norm(nn.Module):\n    pass\n\n\nclass Plain:\n    pass\n\n\nclass Other(dict):\n    pass\n\n\n"
    "def scale(x):\n    return x\n\n\nclass Weight(nn.Parameter):\n    pass\n"
)


@pytest.mark.parametrize(
    "spec,words",
    [
        ("mypkg.ops:Scale.apply.x", "expected MODULE:FUNCTION, a dotted module name and the function's name"),
        ("mypkg.ops:Scale.forward", "or MODULE:CLASS, a torch.autograd.Function"),
        ("mypkg.ops:Scale.", "expected MODULE:FUNCTION"),
        ("mypkg.ops:Norm.apply", "Norm is an nn.Module, called itself"),
        ("mypkg.ops:scale.apply", "scale is no class of the project's source"),
        ("mypkg.ops:Plain", "Plain is a class but neither a torch.autograd.Function nor an nn.Module (its bases: none"),
        ("mypkg.ops:Other.apply", "(its bases: dict, as far as the project's source shows)"),
        ("mypkg.ops:Weight", "Weight is a class but neither"),  # a tensor, though of torch.nn
    ],
)
def test_a_spec_init_cannot_take_is_refused_in_one_line(tmp_path: Path, spec: str, words: str):
    root = _library(tmp_path, CLASSES)
    result = _init(root, "--kernel", spec, "--triton-commit", SHA)
    assert result.exit_code == 2, result.output
    (line,) = result.output.splitlines()
    assert line.startswith("perfbot: error: --kernel ") and spec in line and words in line, line
    assert not (root / "perf").exists()
