"""What `perfbot init` starts a kernel family from: the callable the project's callers call, read
from its source (ast), never imported, since the project's code may need a GPU or do work at
import. Three kinds are taken, as kernel libraries (Liger-Kernel, unsloth) call their kernels:

- a function, called with its arguments (`mypkg.ops.rmsnorm:rmsnorm`);
- a `torch.autograd.Function`, called through its `apply` with the arguments of its `forward`
  after `ctx` (`mypkg.ops:Softmax` or `mypkg.ops:Softmax.apply`; also a name bound to one's
  `apply`, `softmax = Softmax.apply`);
- an `nn.Module`, built with its constructor's arguments and called with those of its `forward`
  after `self` (`mypkg.layers:RMSNorm`).

A class's kind is read from its bases as written, each resolved through the module's imports
(`import torch.nn as nn`, `from torch.autograd import Function`, ...): `torch.autograd.Function`
(and `torch.autograd.function.Function` or `InplaceFunction`) makes an autograd.Function;
`torch.nn.Module`, any other class of `torch.nn` (a layer: `torch.nn.Linear`; not `Parameter`
or `Buffer`) or of `torch.nn.modules` makes an nn.Module. A base that is a class of the project
(in the same module, or imported from one of its packages) is followed to its own bases, and
its methods are the class's where the class does not define them.
"""

from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import BadInput
from ..files import read_text
from ..loading import isolation

Kind = Literal["function", "autograd", "module"]
# A decorator that makes a Triton kernel, which takes a launch grid, not the tensors of a call.
_TRITON_KERNEL = re.compile(r"(^|\.)(jit|autotune|heuristics)$")  # triton.jit, not torch.jit.script
_REEXPORTS_FOLLOWED = 8  # how many `from x import f` re-exports are followed to f's definition
_BASES_FOLLOWED = 8  # how many of the project's own classes deep a class's bases are followed
_SPEC = re.compile(r"(?P<module>[^:]*):(?P<name>[^.]*)(?P<apply>\.apply)?")
_AUTOGRAD_BASES = frozenset(
    {"torch.autograd.Function", "torch.autograd.function.Function", "torch.autograd.function.InplaceFunction"}
)
_NOT_MODULES = frozenset({"Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"})  # tensors
_MODULE_ROOTS = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module", "torch.nn.modules.Module"})
ACCEPTED = (
    "MODULE:FUNCTION, a dotted module name and the function's name (mypkg.ops.rmsnorm:rmsnorm), or MODULE:CLASS, "
    "a torch.autograd.Function (mypkg.ops:Softmax, or mypkg.ops:Softmax.apply) or an nn.Module (mypkg.layers:RMSNorm)"
)


@dataclass(frozen=True)
class Constructor:
    """An nn.Module's constructor, as the skeleton builds the module."""

    signature: str  # `RMSNorm(hidden_size, eps=1e-06)`: its arguments after self
    required: tuple[str, ...] | None  # the arguments without a default; None: not to be read from the source


@dataclass(frozen=True)
class Kernel:
    """The user's callable, as its source defines it."""

    module: str
    function: str  # the name the module binds: the function's, or the class's
    path: Path  # the file that defines it
    parameters: tuple[str, ...] | None  # the arguments a call passes; None: not to be read from the source
    signature: str  # `rmsnorm(x, weight, eps=1e-06)`, `Softmax.apply(x, dim=-1)`, `RMSNorm.forward(x)`, or the name
    kind: Kind = "function"
    constructor: Constructor | None = None  # an nn.Module's
    backward: bool = False  # called through an autograd.Function whose class defines a backward

    @property
    def default_name(self) -> str:
        """The family's name, and its implementation's, when none is given: the function's; a
        class's in lower case with its words joined by '_' (SoftmaxAutoGrad: softmax_auto_grad),
        since the name is also a folder and a Python name."""
        if self.kind == "function":
            return self.function
        words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", self.function)
        return re.sub(r"_+", "_", words).strip("_").lower() or "kernel"


@dataclass(frozen=True)
class _Definition:
    """A module-level statement that binds a name, in the module that holds it."""

    module: str
    path: Path
    tree: ast.Module
    statement: ast.stmt  # a def, a class, an assignment; an import where it leads out of the project


def find_kernel(root: Path, spec: str) -> Kernel:
    """MODULE:FUNCTION (or MODULE:CLASS, MODULE:CLASS.apply), found in the project at `root` (a
    package at its root or under src/, as perfbot imports a checkout's own packages) and read
    from its source."""
    parsed = _SPEC.fullmatch(spec)
    module, name = (parsed["module"], parsed["name"]) if parsed else ("", "")
    if not parsed or not name.isidentifier() or not all(part.isidentifier() for part in module.split(".")):
        raise BadInput(f"--kernel {spec!r}: expected {ACCEPTED}")
    top = module.split(".")[0]
    if top not in isolation.own_packages(root):
        raise BadInput(
            f"--kernel {spec}: {top} is not one of {root}'s own packages: no {top}/ with an __init__.py (or {top}.py) "
            "there, and none under src/; perfbot imports a checkout's kernels from the checkout itself"
        )
    found = _define(root, module, name, spec, _REEXPORTS_FOLLOWED)
    statement = found.statement
    through_apply = parsed["apply"] is not None
    if isinstance(statement, ast.ClassDef):
        return _class_kernel(root, module, name, found, statement, through_apply, spec)
    if through_apply:
        raise BadInput(
            f"--kernel {spec}: {name} is no class of the project's source, so no torch.autograd.Function to call "
            f"through .apply; expected {ACCEPTED}"
        )
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
        for decorator in statement.decorator_list:
            text = ast.unparse(decorator.func if isinstance(decorator, ast.Call) else decorator)
            if _TRITON_KERNEL.search(text):
                raise BadInput(
                    f"--kernel {spec}: {name} is a Triton kernel (@{text}), launched on a grid; name the Python "
                    "function that launches it, which takes the tensors and returns the output"
                )
        signature = f"{name}({ast.unparse(statement.args)})"[:300]
        return Kernel(module, name, found.path, _arguments(statement.args), signature)
    applied = _applied_class(root, found, spec)  # `softmax = Softmax.apply`: called as its callers call it
    forward = _forward(root, *applied, skip=_ctx(root, *applied)) if applied is not None else None
    if forward is not None and applied is not None:
        backward = _method(root, *applied, "backward") is not None
        return Kernel(module, name, found.path, forward[0], f"{name}({forward[1]})"[:300], backward=backward)
    return Kernel(module, name, found.path, None, name)  # a name bound to something else, or imported from outside


def _class_kernel(
    root: Path, module: str, name: str, found: _Definition, cls: ast.ClassDef, through_apply: bool, spec: str
) -> Kernel:
    kind = _kind(root, found, cls, _BASES_FOLLOWED)
    if kind is None:
        bases = ", ".join(ast.unparse(base) for base in cls.bases) or "none"
        raise BadInput(
            f"--kernel {spec}: {name} is a class but neither a torch.autograd.Function nor an nn.Module (its bases: "
            f"{bases}, as far as the project's source shows); expected {ACCEPTED}"
        )
    if kind == "module" and through_apply:
        raise BadInput(
            f"--kernel {spec}: {name} is an nn.Module, called itself (its .apply(fn) applies fn to its submodules); "
            f"give --kernel {module}:{name}"
        )
    skip = _ctx(root, found, cls) if kind == "autograd" else 1  # ctx, or self
    parameters, arguments = _forward(root, found, cls, skip) or (None, "...")
    if kind == "autograd":
        backward = _method(root, found, cls, "backward") is not None
        signature = f"{name}.apply({arguments})"[:300]
        return Kernel(module, name, found.path, parameters, signature, "autograd", backward=backward)
    constructor = _constructor(root, found, cls, name)
    return Kernel(module, name, found.path, parameters, f"{name}.forward({arguments})"[:300], "module", constructor)


def _parse(root: Path, module: str, spec: str) -> tuple[Path, ast.Module]:
    holder = isolation.own_packages(root)[module.split(".")[0]]
    path = _module_file(holder, module)
    if path is None:
        dotted = module.replace(".", "/")
        raise BadInput(f"--kernel {spec}: no module {module} in {holder}: neither {dotted}.py nor {dotted}/__init__.py")
    try:
        return path, ast.parse(read_text(path, "Python module"), filename=str(path))
    except SyntaxError as error:
        raise BadInput(f"--kernel {spec}: {path} does not parse: {error.msg} (line {error.lineno})") from None


def _binding(tree: ast.Module, name: str) -> ast.stmt | None:
    """The module-level statement that binds `name` last."""
    found: ast.stmt | None = None
    for statement in _module_level(tree.body):
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Assign | ast.AnnAssign):
            if name in _defined(statement):
                found = statement
        elif isinstance(statement, ast.ImportFrom) and any((a.asname or a.name) == name for a in statement.names):
            found = statement
    return found


def _define(root: Path, module: str, name: str, spec: str, depth: int) -> _Definition:
    """Where `module` binds `name` at module level, followed through `from x import name` into
    the project's own modules `depth` times at most (a re-export, to the definition)."""
    path, tree = _parse(root, module, spec)
    found = _binding(tree, name)
    if found is None:
        raise BadInput(f"--kernel {spec}: {path} defines no {name} at module level")
    if isinstance(found, ast.ImportFrom):
        source = _imported_module(module, path, found)
        imported = next(a.name for a in found.names if (a.asname or a.name) == name)
        if depth > 0 and source is not None and source.split(".")[0] in isolation.own_packages(root):
            return _define(root, source, imported, spec, depth - 1)
    return _Definition(module, path, tree, found)


def _kind(root: Path, found: _Definition, cls: ast.ClassDef, depth: int) -> Kind | None:
    """What the class is by its bases (the module's docstring says which), or None."""
    for base, definition in _bases(root, found, cls):
        if base in _AUTOGRAD_BASES:
            return "autograd"
        parts = base.split(".")
        layer = len(parts) == 3 and parts[:2] == ["torch", "nn"] and parts[2][:1].isupper()
        if base in _MODULE_ROOTS or base.startswith("torch.nn.modules.") or (layer and parts[2] not in _NOT_MODULES):
            return "module"
        if definition is not None and depth > 0:
            kind = _kind(root, *definition, depth - 1)
            if kind is not None:
                return kind
    return None


_Class = tuple[_Definition, ast.ClassDef]


def _bases(root: Path, found: _Definition, cls: ast.ClassDef) -> list[tuple[str, _Class | None]]:
    """Each base of the class as a dotted name resolved through its module's imports, with its
    definition where it is a class of the project's source."""
    imports = _imports(found)
    bases: list[tuple[str, _Class | None]] = []
    for base in cls.bases:
        if not isinstance(base, ast.Name | ast.Attribute):
            continue  # Generic[T], a call: nothing to resolve
        head, _, rest = ast.unparse(base).partition(".")
        full = ".".join(filter(None, [imports.get(head, head), rest]))
        definition: _Definition | None = None
        if head not in imports and not rest:
            local = _binding(found.tree, head)
            definition = _Definition(found.module, found.path, found.tree, local) if local is not None else None
        elif "." in full and full.split(".")[0] in isolation.own_packages(root):
            module, _, name = full.rpartition(".")
            try:
                definition = _define(root, module, name, "", _REEXPORTS_FOLLOWED)
            except BadInput:  # no such module or name: nothing more to learn of this base
                definition = None
        if definition is not None and isinstance(definition.statement, ast.ClassDef):
            bases.append((full, (definition, definition.statement)))
        else:
            bases.append((full, None))
    return bases


def _lineage(root: Path, found: _Definition, cls: ast.ClassDef, depth: int) -> list[_Class]:
    """The class, then its bases of the project's source, depth first: where its methods are looked up."""
    chain = [(found, cls)]
    if depth > 0:
        for _, definition in _bases(root, found, cls):
            if definition is not None:
                chain += _lineage(root, *definition, depth - 1)
    return chain


def _method(root: Path, found: _Definition, cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    for _, owner in _lineage(root, found, cls, _BASES_FOLLOWED):
        for statement in owner.body:
            if isinstance(statement, ast.FunctionDef) and statement.name == name:
                return statement
    return None


def _ctx(root: Path, found: _Definition, cls: ast.ClassDef) -> int:
    """How many leading arguments of an autograd.Function's forward a call does not pass: its
    ctx, unless the class sets the context up apart (`setup_context`, PyTorch 2's way)."""
    return 0 if _method(root, found, cls, "setup_context") is not None else 1


def _forward(root: Path, found: _Definition, cls: ast.ClassDef, skip: int) -> tuple[tuple[str, ...] | None, str] | None:
    """The arguments a call of the class's forward passes (after the `skip` leading ones) and its
    signature's text after them; None where the project's source defines no forward for it."""
    forward = _method(root, found, cls, "forward")
    if forward is None:
        return None
    args = _without_leading(forward.args, skip)
    return _arguments(args), ast.unparse(args)


def _constructor(root: Path, found: _Definition, cls: ast.ClassDef, name: str) -> Constructor:
    """The module's constructor: its __init__ after self, where the project's source defines it;
    else nn.Module's, which takes nothing, or a torch layer's (nn.Linear's), not read."""
    init = _method(root, found, cls, "__init__")
    if init is None:
        lineage = _lineage(root, found, cls, _BASES_FOLLOWED)
        torch_bases = {base for owner in lineage for base, definition in _bases(root, *owner) if definition is None}
        plain = bool(torch_bases) and torch_bases <= _MODULE_ROOTS
        return Constructor(f"{name}()", ()) if plain else Constructor(f"{name}(...)", None)
    args = _without_leading(init.args, 1)
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    keywords = [a.arg for a, default in zip(args.kwonlyargs, args.kw_defaults, strict=True) if default is None]
    required = (*positional[: len(positional) - len(args.defaults)], *keywords)
    return Constructor(f"{name}({ast.unparse(args)})"[:300], required)


def _applied_class(root: Path, found: _Definition, spec: str) -> _Class | None:
    """The autograd.Function whose apply a module-level name is bound to (`softmax = Softmax.apply`)."""
    statement = found.statement
    value = statement.value if isinstance(statement, ast.Assign | ast.AnnAssign) else None
    if not (isinstance(value, ast.Attribute) and value.attr == "apply" and isinstance(value.value, ast.Name)):
        return None
    try:
        cls = _define(root, found.module, value.value.id, spec, _REEXPORTS_FOLLOWED)
    except BadInput:
        return None
    if not isinstance(cls.statement, ast.ClassDef) or _kind(root, cls, cls.statement, _BASES_FOLLOWED) != "autograd":
        return None
    return cls, cls.statement


def _imports(found: _Definition) -> dict[str, str]:
    """The names the module's imports bind, each with the dotted name it stands for."""
    bound = {}
    for statement in _module_level(found.tree.body):
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(statement, ast.ImportFrom):
            source = _imported_module(found.module, found.path, statement)
            for alias in statement.names:
                if source is not None and alias.name != "*":
                    bound[alias.asname or alias.name] = f"{source}.{alias.name}"
    return bound


def _without_leading(args: ast.arguments, count: int) -> ast.arguments:
    """The arguments but the first `count` positional ones (self, ctx)."""
    trimmed = copy.copy(args)
    posonly, regular = list(args.posonlyargs), list(args.args)
    for _ in range(count):
        if posonly:
            posonly.pop(0)
        elif regular:
            regular.pop(0)
    trimmed.posonlyargs, trimmed.args = posonly, regular
    trimmed.defaults = list(args.defaults)[-len(posonly + regular) :] if posonly or regular else []
    return trimmed


def _module_file(holder: Path, module: str) -> Path | None:
    base = holder.joinpath(*module.split("."))
    for candidate in (base.with_name(base.name + ".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _module_level(statements: list[ast.stmt]) -> list[ast.stmt]:
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
