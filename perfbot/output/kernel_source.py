"""What `perfbot init` starts a kernel family from: the function the project's callers call,
read from its source (ast), never imported, since the project's code may need a GPU or do work
at import."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadInput
from ..files import read_text
from ..loading import isolation

# A decorator that makes a Triton kernel, which takes a launch grid, not the tensors of a call.
_TRITON_KERNEL = re.compile(r"(^|\.)(jit|autotune|heuristics)$")  # triton.jit, not torch.jit.script
_REEXPORTS_FOLLOWED = 8  # how many `from x import f` re-exports are followed to f's definition


@dataclass(frozen=True)
class Kernel:
    """The user's function, as its source defines it."""

    module: str
    function: str
    path: Path  # the file that defines it
    parameters: tuple[str, ...] | None  # the arguments a call passes; None: not to be read from the source
    signature: str  # `rmsnorm(x, weight, eps=1e-06)`, or the bare name


def find_kernel(root: Path, spec: str) -> Kernel:
    """MODULE:FUNCTION, found in the project at `root` (a package at its root or under src/, as
    perfbot imports a checkout's own packages) and read from its source."""
    module, colon, function = spec.partition(":")
    if not colon or not function.isidentifier() or not all(part.isidentifier() for part in module.split(".")):
        raise BadInput(
            f"--kernel {spec!r}: expected MODULE:FUNCTION, a dotted module name and the function's name "
            "(mypkg.ops.rmsnorm:rmsnorm)"
        )
    top = module.split(".")[0]
    holder = isolation.own_packages(root).get(top)
    if holder is None:
        raise BadInput(
            f"--kernel {spec}: {top} is not one of {root}'s own packages: no {top}/ with an __init__.py (or {top}.py) "
            "there, and none under src/; perfbot imports a checkout's kernels from the checkout itself"
        )
    return _read_kernel(root, holder, module, function, spec, _REEXPORTS_FOLLOWED)


def _read_kernel(root: Path, holder: Path, module: str, function: str, spec: str, depth: int) -> Kernel:
    path = _module_file(holder, module)
    if path is None:
        dotted = module.replace(".", "/")
        raise BadInput(f"--kernel {spec}: no module {module} in {holder}: neither {dotted}.py nor {dotted}/__init__.py")
    try:
        tree = ast.parse(read_text(path, "Python module"), filename=str(path))
    except SyntaxError as error:
        raise BadInput(f"--kernel {spec}: {path} does not parse: {error.msg} (line {error.lineno})") from None
    found: ast.stmt | None = None
    for statement in _module_level(tree.body):
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Assign | ast.AnnAssign):
            if function in _defined(statement):
                found = statement
        elif isinstance(statement, ast.ImportFrom) and any((a.asname or a.name) == function for a in statement.names):
            found = statement
    if found is None:
        raise BadInput(f"--kernel {spec}: {path} defines no {function} at module level")
    if isinstance(found, ast.ImportFrom):
        source = _imported_module(module, path, found)
        name = next(a.name for a in found.names if (a.asname or a.name) == function)
        places = isolation.own_packages(root)
        if depth > 0 and source is not None and source.split(".")[0] in places:
            inner = _read_kernel(root, places[source.split(".")[0]], source, name, spec, depth - 1)
            return Kernel(module, function, inner.path, inner.parameters, inner.signature.replace(name, function, 1))
        return Kernel(module, function, path, None, function)
    if isinstance(found, ast.FunctionDef | ast.AsyncFunctionDef):
        for decorator in found.decorator_list:
            text = ast.unparse(decorator.func if isinstance(decorator, ast.Call) else decorator)
            if _TRITON_KERNEL.search(text):
                raise BadInput(
                    f"--kernel {spec}: {function} is a Triton kernel (@{text}), launched on a grid; name the Python "
                    "function that launches it, which takes the tensors and returns the output"
                )
        return Kernel(module, function, path, _arguments(found.args), f"{function}({ast.unparse(found.args)})"[:300])
    return Kernel(module, function, path, None, function)  # a class, or a name bound to something else


def _module_file(holder: Path, module: str) -> Path | None:
    base = holder.joinpath(*module.split("."))
    for candidate in (base.with_name(base.name + ".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _module_level(statements: Sequence[ast.stmt]) -> list[ast.stmt]:
    """The module's own statements, those inside its `if`, `try` and `with` blocks too, in order."""
    found: list[ast.stmt] = []
    for statement in statements:
        found.append(statement)
        if isinstance(statement, ast.If | ast.With):
            found += _module_level([*statement.body, *getattr(statement, "orelse", [])])
        elif isinstance(statement, ast.Try):
            handlers = [s for handler in statement.handlers for s in handler.body]
            found += _module_level([*statement.body, *handlers, *statement.orelse, *statement.finalbody])
    return found


def _defined(statement: ast.stmt) -> set[str]:
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {statement.name}
    targets = statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
    return {target.id for target in targets if isinstance(target, ast.Name)}


def _imported_module(module: str, path: Path, statement: ast.ImportFrom) -> str | None:
    """The module a `from ... import` statement of `module` names, made absolute."""
    if not statement.level:
        return statement.module
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    if statement.level - 1 >= len(package):
        return None
    base = package[: len(package) - (statement.level - 1)]
    return ".".join([*base, *([statement.module] if statement.module else [])])


def _arguments(args: ast.arguments) -> tuple[str, ...] | None:
    """The arguments a call passes by position: those without a default, else every positional
    one; None where it takes only *args."""
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    required = positional[: len(positional) - len(args.defaults)]
    return tuple(required or positional) or None
