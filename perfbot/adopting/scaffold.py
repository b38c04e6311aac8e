"""`perfbot init`: the files that make an existing repository's kernel measurable, planned whole
and written only where nothing stands.

What it writes, the first time: the kernels package (`perf/__init__.py`, whose `subjects` lists
the kernel families) and in it a family for one kernel of the project (`perf/NAME/`: its
inputs, a float64 reference, the tolerance and the suites left for the user to fill in, each
place marked with MARK), the `[tool.perfbot]` table appended to pyproject.toml, perfbot's default
thresholds.yaml and, on request, the GitHub workflows with the GPU setup action. Where the table
stands already, another family beside the first, and nothing else: the package's __init__.py,
the table and the policy are the user's by then, so the two lines to add are said, not written.
It refuses to write over anything, and anywhere outside the project (a symlink on the way that
leads out, files.py's containment rule): every target is checked before the first byte is
written, and a write that fails midway takes back what it wrote, so a refusal leaves the tree
as it was.

The user's function, autograd.Function or nn.Module is read from its source (kernel_source.py),
never imported: init runs none of the project's code, which may need a GPU or do work at
import. The first import is `perfbot check`'s, under perfbot's guard.
"""

from __future__ import annotations

import json
import keyword
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import jinja2

from ..config import FULL_SHA
from ..deciding.thresholds import DEFAULT_PATH
from ..errors import BadInput, EnvironmentFailure
from ..files import Inside, read_text, umask, write_all
from .kernel_source import Kernel

MARK = "perfbot init: fill in"
# The subject's name: also the folder's, and a string in Python and YAML, so kept plain.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# Names the written module defines or uses itself: an argument of the user's function by one of
# these names is renamed in it.
_TAKEN = frozenset({"annotations", "case", "generator", "dtype", "device", "torch", "Case", "Subject", "DTYPES"})
_TAKEN_BY_MODULES = frozenset({"built", "new_module", "key", "_BUILT"})  # where it builds an nn.Module
# The workflows and the GPU setup action, shipped as links to perfbot's own (the wheel carries the
# files): (the packaged file under templates/github, where it goes under .github).
_GITHUB_FILES = (
    "workflows/gpu-request.yml",
    "workflows/gpu-check.yml",
    "workflows/baseline.yml",
    "workflows/bisect.yml",
    "workflows/perfbot-check.yml",  # examples/rmsnorm's CPU check: perfbot check on every push
    "actions/gpu-setup/action.yml",
    "perfbot/install.sh",
    "perfbot/gpu-labels.sh",
    "perfbot/maintainer.sh",
    "perfbot/push-baseline.sh",
    "perfbot/codeowners.sh",
    "perfbot/stop-commands.sh",  # sourced by the steps that print stored values
    "perfbot/requirements-core.txt",  # the hashed lock install.sh core installs from
)


@dataclass(frozen=True)
class TritonPin:
    commit: str
    source: str  # where it came from, in words


@dataclass(frozen=True)
class Scaffold:
    """Everything init would write, planned; nothing of it is on disk yet."""

    root: Path
    files: dict[Path, str]  # the new files
    scripts: tuple[Path, ...]  # of those, the ones made executable
    pyproject: Path
    table: str | None  # appended to pyproject.toml, or its whole text where there was none; None: there is one
    kernels: str  # the kernels package, relative to the root
    family: str  # the family's package in it, relative to the root
    alias: str  # the family's name in the kernels package's __init__.py
    pin: TritonPin | None  # None: the table, which pins Triton, stands already
    workflows: bool

    def lines_to_add(self) -> tuple[str, str]:
        """What the kernels package's __init__.py needs to list this family beside the others."""
        return f"from .{self.alias} import subject as {self.alias}", f"subjects.append({self.alias})"


def triton_pin(given: str | None) -> TritonPin:
    """The Triton commit for `[tool.perfbot] triton-commit`: `given`, else the installed Triton's
    (PERFBOT_TRITON_COMMIT, a source build's version, a release's tag). One that is not a full
    commit is refused, saying how to pass it, since the config accepts nothing else."""
    if given is not None:
        if not FULL_SHA.fullmatch(given):
            raise BadInput(f"--triton-commit {given[:100]!r}: must be a full commit, 40 lower-case hex digits")
        return TritonPin(given, "--triton-commit")
    try:
        from ..measuring.environment import found_triton_commit, triton_version

        version, found = triton_version(), found_triton_commit()
    except ModuleNotFoundError as error:
        if error.name not in ("torch", "triton"):
            raise
        raise BadInput(
            f"{error.name} is not installed here, so the Triton commit to pin cannot be read; pass "
            "--triton-commit SHA, the full commit of the Triton CI should build (a release's: git rev-parse "
            "vX.Y.Z^{commit} in a clone of github.com/triton-lang/triton)"
        ) from None
    if found is None:
        raise BadInput(
            f"the installed Triton {version} is a release whose commit perfbot does not know; pass "
            f"--triton-commit SHA, the commit its tag points to (git rev-parse v{version}^{{commit}} in a clone "
            "of github.com/triton-lang/triton), or set PERFBOT_TRITON_COMMIT"
        )
    if not FULL_SHA.fullmatch(found.commit):
        raise BadInput(
            f"{found.source} gives the Triton commit as {found.commit[:100]!r}, not a full 40-hex-digit one; pass "
            f"--triton-commit SHA with the full commit (git rev-parse {found.commit[:40]} in a clone of Triton)"
        )
    return TritonPin(found.commit, found.source)


def existing_kernels(root: Path) -> str | None:
    """The kernels package the project's [tool.perfbot] table names (by default `kernels`), or
    None where it has no table: the first init."""
    pyproject = root / "pyproject.toml"
    if not os.path.lexists(pyproject):
        return None
    tool = _toml(pyproject, read_text(pyproject, "TOML file")).get("tool", {})
    table = tool.get("perfbot") if isinstance(tool, dict) else None
    if not isinstance(table, dict):
        return None
    kernels = table.get("kernels", "kernels")
    if not isinstance(kernels, str):
        raise BadInput(f"{pyproject}: [tool.perfbot] kernels must be a folder's name, got {kernels!r}")
    return kernels


def plan(
    root: Path,
    kernel: Kernel,
    pin: TritonPin | None,
    *,
    name: str,
    folder: Path,
    workflows: bool,
    kernels: str | None = None,
) -> Scaffold:
    """What init would write for `kernel`: the family at `folder` and, without the `kernels`
    package of a [tool.perfbot] table standing (the first init), that package around it, the
    table and the policy. Refused (BadInput naming it) where anything it would write stands
    already, or where the family would be no package of the kernels package."""
    if not _NAME.fullmatch(name):
        raise BadInput(
            f"--name {name[:100]!r}: 1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    package = Path(os.path.normpath(root / folder))
    if not package.is_relative_to(root) or package == root:
        raise BadInput(f"--dir {folder}: must be a folder inside the project, {root}")
    top = package.parent if kernels is None else Path(os.path.normpath(root / kernels))
    if top == root or package.parent != top:
        inside = f"in {kernels}/, the package [tool.perfbot] kernels names" if kernels is not None else "in a folder"
        raise BadInput(f"--dir {folder}: a kernel family goes {inside} (perf/NAME); its package lists the families")
    project = _inside(root)
    project.check(package / "__init__.py")  # before a file is read through a link out of the project
    alias = package.name
    if not alias.isidentifier() or keyword.iskeyword(alias):
        raise BadInput(
            f"--dir {folder}: the family's folder {alias!r} must be a Python name (letters, digits, '_'): "
            f"the kernels package imports it as .{alias}"
        )
    if kernels is not None and not (top / "__init__.py").is_file():
        raise BadInput(
            f"{top / '__init__.py'}: no such file; [tool.perfbot] kernels names {kernels}, the package whose "
            "`subjects` lists the families, and perfbot init adds one beside the others there"
        )
    relative = top.relative_to(root).as_posix()
    parameters = _parameter_names(kernel)
    implementation = name if name != "torch" else "kernel"  # "torch" is the baseline's
    arguments = ", ".join(parameters) if kernel.parameters is not None else "*inputs"
    first = parameters[0] if kernel.parameters is not None else "inputs[0]"
    calls = {
        "function": f"{kernel.function}({arguments})",
        "autograd": f"{kernel.function}.apply({arguments})",
        "module": f"built({first})({arguments})",
    }
    constructor = kernel.constructor
    values = {
        "module": kernel.module,
        "function": kernel.function,
        "kind": kernel.kind,
        "backward": kernel.backward,
        "name": name,
        "alias": alias,
        "implementation": implementation,
        "inputs": parameters,
        "parameters": arguments,
        "invocation": calls[kernel.kind],
        "first": parameters[0],  # the builders' argument, the first input: its name, or a guess
        "constructor": constructor.signature if constructor is not None else "",
        "constructor_stops": constructor is not None and constructor.required != (),
        "call": kernel.signature
        if kernel.parameters is not None
        else f"{kernel.signature} (its arguments are not to be read from {kernel.path.name})",
        "implementations": [implementation, "torch"],
        "commit": pin.commit if pin is not None else "",
        "source": " ".join(pin.source.split()) if pin is not None else "",
        "kernels": relative,
    }
    files = {
        package / "__init__.py": _render("subject.py.j2", values),
        package / "suites.yaml": _render("suites.yaml.j2", values),
    }
    if kernels is None:
        files[top / "__init__.py"] = _render("families.py.j2", values)
        files[root / "thresholds.yaml"] = DEFAULT_PATH.read_text(encoding="utf-8")
    scripts = []
    if workflows:
        github = _templates() / "github"
        for packaged in _GITHUB_FILES:
            files[root / ".github" / packaged] = (github / packaged).read_text(encoding="utf-8")
            if packaged.endswith(".sh"):
                scripts.append(root / ".github" / packaged)
        files[root / ".github" / "CODEOWNERS"] = _render("CODEOWNERS.j2", {"kernels": relative.replace(" ", "\\ ")})
    pyproject = root / "pyproject.toml"
    table = _render("pyproject.toml.j2", values) if kernels is None else None
    for path in files:
        project.check(path)
    if table is not None:
        project.check(pyproject, follow=True)  # appended to: a link there is written through
    _refuse_what_stands(package, files, pyproject, table)
    family = package.relative_to(root).as_posix()
    return Scaffold(root, files, tuple(scripts), pyproject, table, relative, family, alias, pin, workflows)


def _parameter_names(kernel: Kernel) -> list[str]:
    """The names the written module gives the call's arguments: their own, but for those the
    module uses itself."""
    taken = _TAKEN | {kernel.function} | (_TAKEN_BY_MODULES if kernel.kind == "module" else set())
    names: list[str] = []
    for parameter in kernel.parameters or ("x",):
        while parameter in taken or parameter in names:
            parameter += "_"
        names.append(parameter)
    return names


def _refuse_what_stands(package: Path, files: dict[Path, str], pyproject: Path, table: str | None) -> None:
    standing = [path for path in (package, *files) if os.path.lexists(path)]
    if standing:
        where = " (give --dir another folder)" if standing[0] == package else ""
        raise BadInput(f"{standing[0]}: already exists; perfbot init writes over nothing, so it wrote nothing{where}")
    if table is None or not os.path.lexists(pyproject):
        return
    text = read_text(pyproject, "TOML file")
    tool = _toml(pyproject, text).get("tool", {})
    if isinstance(tool, dict) and "perfbot" in tool:
        raise BadInput(
            f"{pyproject}: already has a [tool.perfbot] table; perfbot init writes over nothing, so it wrote nothing"
        )
    appended = _toml(pyproject, _appended(text, table)).get("tool")
    if not isinstance(appended, dict) or "perfbot" not in appended:
        raise BadInput(f"{pyproject}: [tool.perfbot] cannot be appended to it (its tool is not a table)")


def _toml(pyproject: Path, text: str) -> dict[str, object]:
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError, ValueError) as error:
        raise BadInput(f"{pyproject}: cannot read it as TOML, to add [tool.perfbot] to it: {error}") from None


def _appended(text: str, table: str) -> str:
    """What follows the file's own text: a blank line, then the table."""
    return text + ("" if not text or text.endswith("\n") else "\n") + ("\n" if text.strip() else "") + table


def write(scaffold: Scaffold) -> None:
    """Write the planned files (all or none), then append the table to pyproject.toml, or write it
    whole where there was none. Should anything fail or be interrupted on the way, the files
    written and the folders made are taken away again: the tree is left as it was."""
    project = _inside(scaffold.root)
    made = sorted(
        {folder for path in scaffold.files for folder in path.parents if not os.path.lexists(folder)},
        key=lambda folder: len(folder.parts),
        reverse=True,
    )
    new_pyproject = not os.path.lexists(scaffold.pyproject)
    files = dict(scaffold.files)
    if new_pyproject and scaffold.table is not None:
        files[scaffold.pyproject] = scaffold.table
    written: list[Path] = []
    try:
        write_all(files, replace=False, inside=project)
        written = list(files)
        for script in scaffold.scripts:
            _make_executable(script)
        if not new_pyproject and scaffold.table is not None:
            _append(project, scaffold.pyproject, scaffold.table)
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        for folder in made:
            try:
                folder.rmdir()
            except OSError:  # not made here after all, or something else went in
                pass
        raise


def _make_executable(script: Path) -> None:
    try:
        os.chmod(script, 0o777 & ~umask())  # a script the workflows run, as git would check it out
    except OSError as error:
        raise EnvironmentFailure(f"{script}: cannot make it executable: {error.strerror or error}") from None


def _append(project: Inside, pyproject: Path, table: str) -> None:
    project.check(pyproject, follow=True)  # again: the plan's check may be a while old
    try:
        text = pyproject.read_text(encoding="utf-8")
        with open(pyproject, "a", encoding="utf-8") as handle:
            handle.write(_appended(text, table)[len(text) :])
    except OSError as error:
        raise EnvironmentFailure(f"{pyproject}: cannot append [tool.perfbot]: {error.strerror or error}") from None


def _inside(root: Path) -> Inside:
    return Inside(root, "the project")


def _templates() -> Path:
    return Path(__file__).with_name("templates")


def _render(template: str, values: Mapping[str, object]) -> str:
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_templates()),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # Python, YAML and TOML: each value goes through the filter of its language
    )
    environment.filters["py"] = json.dumps  # a Python string literal too, for the plain names it is given
    environment.filters["toml"] = lambda value: json.dumps(value, ensure_ascii=False)  # a TOML basic string
    return environment.get_template(template).render(values)
