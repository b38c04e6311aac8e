"""`perfbot init` writes nowhere outside the project. A symlink on the way to anything it writes
(the kernels package, pyproject.toml, which it appends to, the workflows) that leads out of the
project, or nowhere, is refused in one line naming the path and the link, exit 2; the tree
inside and the place outside are left exactly as they were (files.py's containment rule). A link
to a folder inside the project is followed. And a refusal, however late it comes, leaves the tree
as it was: no folder made on the way stays behind."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.adopting import kernel_source, scaffold
from perfbot.cli import perfbot
from perfbot.errors import BadInput
from tests.test_init import KERNEL, PYPROJECT, SHA, _tree

OUTSIDE_PYPROJECT = b'[project]\nname = "someone-elses"\n'


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A project of kernels, src/mypkg/ops/rmsnorm.py, without perfbot."""
    root = tmp_path / "repo"
    (root / "src" / "mypkg" / "ops").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "src" / "mypkg" / "__init__.py").write_text("")
    (root / "src" / "mypkg" / "ops" / "rmsnorm.py").write_text(KERNEL)
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A place outside the project that a link may lead to: a folder with a file in it, and
    another project's pyproject.toml."""
    place = tmp_path / "outside"
    (place / "folder").mkdir(parents=True)
    (place / "folder" / "precious.txt").write_text("precious")
    (place / "pyproject.toml").write_bytes(OUTSIDE_PYPROJECT)
    return place


def _init(repo: Path, *args: str):
    return CliRunner().invoke(perfbot, ["init", "--project", str(repo), "--triton-commit", SHA, *args])


def _link(path: Path, target: Path | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    path.symlink_to(target)


def _write(path: Path, text: str) -> None:
    path.write_text(text)


# Each: what is set up in the project (given the place outside), init's arguments, and the words of
# the refusal, formatted with the project as {r} and the place outside as {o}.
Setup = Callable[[Path, Path], None]
REFUSED: dict[str, tuple[Setup, tuple[str, ...], str]] = {
    "perf, a link to a folder outside": (
        lambda r, o: _link(r / "perf", o / "folder"),
        (),
        "{r}/perf/rmsnorm/__init__.py: {r}/perf is a symlink to {o}/folder, outside the project ({r}); "
        "perfbot writes only inside it",
    ),
    "perf/rmsnorm, a link to a folder outside": (
        lambda r, o: _link(r / "perf" / "rmsnorm", o / "folder"),
        (),
        "{r}/perf/rmsnorm is a symlink to {o}/folder, outside the project",
    ),
    "--dir's folder, a link to a folder outside": (
        lambda r, o: _link(r / "bench", o / "folder"),
        ("--dir", "bench/rmsnorm"),
        "{r}/bench is a symlink to {o}/folder, outside the project",
    ),
    "pyproject.toml, a link to a file outside": (
        lambda r, o: _link(r / "pyproject.toml", o / "pyproject.toml"),
        (),
        "{r}/pyproject.toml: is a symlink to {o}/pyproject.toml, outside the project ({r})",
    ),
    ".github, a link to a folder outside": (
        lambda r, o: _link(r / ".github", o / "folder"),
        ("--workflows",),
        "{r}/.github is a symlink to {o}/folder, outside the project",
    ),
    ".github/workflows, a link to a folder outside": (
        lambda r, o: _link(r / ".github" / "workflows", o / "folder"),
        ("--workflows",),
        "{r}/.github/workflows is a symlink to {o}/folder, outside the project",
    ),
    "perf, a link to a folder outside that is not there": (
        lambda r, o: _link(r / "perf", o / "missing"),
        (),
        "{r}/perf is a symlink that leads nowhere ({o}/missing)",
    ),
    ".github/workflows, a link inside that leads nowhere": (
        lambda r, o: _link(r / ".github" / "workflows", "gone"),
        ("--workflows",),
        "{r}/.github/workflows is a symlink that leads nowhere (gone)",
    ),
    ".github, a file": (
        lambda r, o: _write(r / ".github", "not a folder\n"),
        ("--workflows",),
        "cannot make its folder: {r}/.github is a file, not a folder",
    ),
    "perf, a link to itself": (
        lambda r, o: _link(r / "perf", "perf"),
        (),
        "{r}/perf cannot be followed",
    ),
}


@pytest.mark.parametrize("what", sorted(REFUSED))
def test_a_link_out_of_the_project_or_nowhere_is_refused_and_nothing_changes(repo: Path, outside: Path, what: str):
    setup, args, words = REFUSED[what]
    setup(repo, outside)
    inside, beyond = _tree(repo), _tree(outside)
    result = _init(repo, "--kernel", "mypkg.ops.rmsnorm:rmsnorm", *args)
    assert result.exit_code == 2, result.output
    (line,) = result.output.splitlines()  # one line, no traceback
    assert line.startswith("perfbot: error: ") and words.format(r=repo, o=outside) in line, line
    assert _tree(repo) == inside
    assert _tree(outside) == beyond
    assert (outside / "pyproject.toml").read_bytes() == OUTSIDE_PYPROJECT


@pytest.mark.parametrize(
    "what", ["perf, a link to a folder outside", "pyproject.toml, a link to a file outside", ".github, a file"]
)
def test_the_plan_refuses_before_anything_is_written(repo: Path, outside: Path, what: str):
    # The refusal comes from planning, not from a write that was taken back.
    setup, _, words = REFUSED[what]
    setup(repo, outside)
    kernel = kernel_source.find_kernel(repo, "mypkg.ops.rmsnorm:rmsnorm")
    pin = scaffold.TritonPin(SHA, "--triton-commit")
    with pytest.raises(BadInput) as refused:
        scaffold.plan(repo, kernel, pin, name="rmsnorm", folder=Path("perf/rmsnorm"), workflows=True)
    assert words.format(r=repo, o=outside) in str(refused.value)


@pytest.mark.parametrize("package", ["the first family's", "an empty folder"])
def test_a_second_init_into_a_kernels_package_outside_is_refused(repo: Path, outside: Path, package: str):
    assert _init(repo, "--kernel", "mypkg.ops.rmsnorm:rmsnorm").exit_code == 0
    # The table names perf: now a link to a folder outside, the package moved there or none.
    if package == "the first family's":
        (repo / "perf").rename(outside / "perf")
    else:
        (outside / "perf").mkdir()
        shutil.rmtree(repo / "perf")
    _link(repo / "perf", outside / "perf")
    (repo / "src" / "mypkg" / "ops" / "scale.py").write_text("def scale(x, factor=2.0):\n    return x * factor\n")
    inside, beyond = _tree(repo), _tree(outside)
    result = CliRunner().invoke(perfbot, ["init", "--project", str(repo), "--kernel", "mypkg.ops.scale:scale"])
    assert result.exit_code == 2, result.output
    (line,) = result.output.splitlines()
    assert f"{repo}/perf is a symlink to {outside}/perf, outside the project" in line
    assert _tree(repo) == inside and _tree(outside) == beyond


def test_links_to_places_inside_the_project_are_followed(repo: Path):
    (repo / "bench").mkdir()
    _link(repo / "perf", "bench")
    (repo / "config").mkdir()
    (repo / "pyproject.toml").rename(repo / "config" / "pyproject.toml")
    _link(repo / "pyproject.toml", "config/pyproject.toml")
    result = _init(repo, "--kernel", "mypkg.ops.rmsnorm:rmsnorm")
    assert result.exit_code == 0, result.output
    assert sorted(p.relative_to(repo).as_posix() for p in (repo / "bench").rglob("*")) == [
        "bench/__init__.py",
        "bench/rmsnorm",
        "bench/rmsnorm/__init__.py",
        "bench/rmsnorm/suites.yaml",
    ]
    assert (repo / "pyproject.toml").is_symlink()
    appended = (repo / "config" / "pyproject.toml").read_text()
    assert appended.startswith(PYPROJECT) and "[tool.perfbot]" in appended


# --- a refusal that comes while writing -----------------------------------------------------------


def _planned(repo: Path) -> scaffold.Scaffold:
    kernel = kernel_source.find_kernel(repo, "mypkg.ops.rmsnorm:rmsnorm")
    pin = scaffold.TritonPin(SHA, "--triton-commit")
    return scaffold.plan(repo, kernel, pin, name="rmsnorm", folder=Path("perf/rmsnorm"), workflows=True)


def test_a_folder_that_cannot_be_made_once_writing_began_leaves_no_folder_behind(repo: Path):
    planned = _planned(repo)
    (repo / ".github").write_text("")  # after the plan: the workflows come after the family's files
    before = _tree(repo)
    with pytest.raises(BadInput, match=r"\.github is a file, not a folder"):
        scaffold.write(planned)
    assert _tree(repo) == before  # no perf/, no perf/rmsnorm/


def test_a_pyproject_that_leads_out_once_writing_began_takes_back_every_file(repo: Path, outside: Path):
    planned = _planned(repo)
    _link(repo / "pyproject.toml", outside / "pyproject.toml")  # after the plan, before the append
    before, beyond = _tree(repo), _tree(outside)
    with pytest.raises(BadInput, match=r"pyproject\.toml: is a symlink to .*, outside the project"):
        scaffold.write(planned)
    assert _tree(repo) == before and _tree(outside) == beyond
