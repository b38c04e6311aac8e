"""Each side of an A/B runs its own checkout's code (DESIGN.md, "Each side's own code"), in the
layouts real kernel repositories use: kernels under `src/PKG/ops/`, imported by package name
from the subject, the package installed for development with a real `uv pip install -e` (both of
setuptools' kinds: a `.pth` path entry, and a finder). The fake GPU times a benchmark by the
files the captured call really ran, so a side that ran the other's kernel shows in the verdict;
each side's results must record the digests of its own files; and with the isolation switched
off, the provenance check must refuse the run that would time one checkout twice."""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.config import load_project_config
from perfbot.deciding.thresholds import DEFAULT_NOTE, DEFAULT_PATH
from perfbot.loading import isolation
from perfbot.loading.package import load_subject
from perfbot.measuring import loads
from tests.conftest import ROOT, quick_first
from tests.test_runner_cpu import _git

BASE_KERNEL = "def scale(x):\n    return x * 2\n"
HEAD_KERNEL = "def scale(x):\n    return x + x  # the head's kernel: the same result, another file\n"
SUBJECT = """
import torch

from perfbot import Case, Subject, Suite
from tinyops.ops.k import scale

CASES = (Case("pr", "odd", {"n": 33}, "float32"), Case("pr", "even", {"n": 64}, "float32"))
subject = Subject(
    name="scale",
    inputs=lambda case, g: (torch.randn(case.n, generator=g, device=g.device),),
    reference=lambda x: x.double() * 2,
    tolerance={"float32": 1e-6},
    suites={"pr": Suite("pr", "", ("triton", "torch"), CASES)},
)


@subject.implementation("triton", under_test=True)
def triton_scale(x):
    return scale(x)


@subject.implementation("torch")
def torch_scale(x):
    return torch.mul(x, 2)
"""
# setuptools makes a `.pth` path entry of src/ for a plain src layout, and a finder (a module
# mapping each package to its folder) for any other mapping of packages to folders.
LAYOUTS = {
    "pth": '[tool.setuptools]\npackage-dir = {"" = "src"}\n',
    "finder": '[tool.setuptools]\npackage-dir = {"tinyops" = "src/tinyops"}\npackages = ["tinyops", "tinyops.ops"]\n',
}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def src_layout_repo(root: Path, layout: str = "pth") -> Path:
    """A project whose kernels live in src/tinyops/ops/k.py and whose subject (bench/) imports them
    by package name, committed twice: base, then head, which differ only in the kernel file."""
    commit = load_project_config(ROOT).triton_commit
    (root / "src" / "tinyops" / "ops").mkdir(parents=True)
    (root / "bench").mkdir()
    (root / "pyproject.toml").write_text(
        '[project]\nname = "tinyops"\nversion = "0.1"\n\n'
        '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'{LAYOUTS[layout]}\n[tool.perfbot]\ntriton-commit = "{commit}"\nkernels = "bench"\n'
    )
    shutil.copy(ROOT / "thresholds.yaml", root / "thresholds.yaml")
    (root / ".gitignore").write_text("*.egg-info/\nbuild/\n__pycache__/\n")
    (root / "src" / "tinyops" / "__init__.py").write_text("")
    (root / "src" / "tinyops" / "ops" / "__init__.py").write_text("")
    (root / "src" / "tinyops" / "ops" / "k.py").write_text(BASE_KERNEL)
    (root / "bench" / "__init__.py").write_text(SUBJECT)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    (root / "src" / "tinyops" / "ops" / "k.py").write_text(HEAD_KERNEL)
    _git(root, "commit", "-qam", "head")
    return root


@pytest.fixture
def clean_imports(monkeypatch):
    """sys.path, the finders and the path hooks as they were, and no module of the generated
    package left behind, whatever an editable install or a test added."""
    for name in ("path", "meta_path", "path_hooks"):
        monkeypatch.setattr(sys, name, list(getattr(sys, name)))
    yield
    for name in [n for n in sys.modules if n.partition(".")[0] in ("tinyops", "bench") or "editable___tinyops" in n]:
        del sys.modules[name]


def install_editable(repo: Path, prefix: Path) -> None:
    """`uv pip install -e` of the repository into a throwaway prefix, whose site folder this
    process then reads (`use_install`): the development install a kernel repository has. A prefix
    rather than a venv: the A/B runs in this process, on the fake GPU, so this interpreter must see
    the install; a venv's own interpreter would not have perfbot's dependencies
    (--system-site-packages reaches the base Python's, not this venv's).

    What the install leaves is setuptools' (its PEP 660 hook writes the `.pth` entry or the
    finder), the same files whichever front end calls it: uv does in 0.6 CPU-s what pip did in
    2.5."""
    from uv import find_uv_bin  # the test extra's; a GPU machine collecting `-m gpu` may lack it

    offline = ["--offline", "--no-deps", "--no-build-isolation", "--python", sys.executable]
    subprocess.run(
        [find_uv_bin(), "pip", "install", "-q", *offline, "--prefix", str(prefix), "-e", str(repo)],
        check=True,
        capture_output=True,
        timeout=300,
    )


def use_install(prefix: Path) -> None:
    """The prefix's site folder read as Python's start-up reads one: its .pth files run."""
    site.addsitedir(sysconfig.get_path("purelib", vars={"base": str(prefix), "platbase": str(prefix)}))


@pytest.fixture(scope="module")
def installs(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], tuple[Path, Path]]:
    """(repository, prefix) of src_layout_repo(layout) installed for development, once for the
    module (an install runs setuptools' build in an interpreter of its own): for the tests that
    leave the repository as it is, or put it back, which use_install(prefix) each. They are of one
    pytest-xdist group, so that one worker runs them and installs each layout once."""
    made: dict[str, tuple[Path, Path]] = {}

    def install(layout: str) -> tuple[Path, Path]:
        if layout not in made:
            root = tmp_path_factory.mktemp(f"installed-{layout}")
            made[layout] = src_layout_repo(root / "repo", layout), root / "prefix"
            install_editable(*made[layout])
        return made[layout]

    return install


# The tests that share `installs`' repositories.
SHARING_INSTALLS = pytest.mark.xdist_group("own_code_installs")


def _digests_run(gpu, captured, under: Path) -> set[str]:
    """The digests of the files of the project's code that a capture's call ran."""
    files = [Path(f) for f in gpu.ran[captured.graph] if f.startswith(str(under))]
    return {hashlib.sha256(f.read_bytes()).hexdigest() for f in files if f.is_file()}


def _ab(repo: Path, out: Path, *extra: str, base: str = "HEAD~1"):
    return CliRunner().invoke(
        perfbot, ["ab", base, "--project", str(repo), "--samples", "12", "--out-dir", str(out), *extra]
    )


def _slower_where_the_head_kernel_ran(gpu, under: Path) -> None:
    """Timing by the code run: a capture that ran the head's kernel file takes 20% longer."""
    gpu.trace = True
    gpu.context = lambda name, previous, captured: (
        1.2 if _sha(HEAD_KERNEL) in _digests_run(gpu, captured[name], under) else 1.0
    )


@SHARING_INSTALLS
@pytest.mark.parametrize(
    # The .pth layout in the slow tier (about 3 CPU-s); the finder's stays in the inner loop.
    "layout",
    [pytest.param(layout, marks=pytest.mark.slow) if layout == "pth" else layout for layout in sorted(LAYOUTS)],
)
def test_an_editable_src_layout_times_each_sides_own_kernel(gpu, clean_imports, installs, tmp_path, layout):
    repo, prefix = installs(layout)
    use_install(prefix)
    installed = importlib.import_module("tinyops.ops.k")  # the install works: by name, the head's copy
    assert Path(installed.__file__).resolve() == (repo / "src" / "tinyops" / "ops" / "k.py").resolve()
    _slower_where_the_head_kernel_ran(gpu, repo)
    timed, ran_in = gpu.context, tmp_path / "pids"

    def noting_the_process(name, previous, captured):
        with ran_in.open("a") as noted:
            noted.write(f"{os.getpid()}\n")
        return timed(name, previous, captured)

    gpu.context = noting_the_process
    result = _ab(repo, tmp_path / "ab")
    assert result.exit_code == 1, result.output  # two different kernels, the head's slower: confirmed
    rows = json.loads((tmp_path / "ab" / "comparison.json").read_text())["comparisons"]
    verdicts = {(r["benchmark"]["case"], r["benchmark"]["kernel"]): r["verdict"] for r in rows}
    assert verdicts == {("odd", "triton"): "regression", ("even", "triton"): "regression"} | {
        (case, "torch"): "unchanged" for case in ("odd", "even")
    }
    for side, kernel in (("base", BASE_KERNEL), ("head", HEAD_KERNEL)):
        recorded = json.loads((tmp_path / "ab" / f"{side}.json").read_text())["settings"]["sources"]
        assert recorded["triton"] == {
            "bench/__init__.py": _sha(SUBJECT),
            "src/tinyops/__init__.py": _sha(""),  # the packages the kernel was imported through
            "src/tinyops/ops/__init__.py": _sha(""),
            "src/tinyops/ops/k.py": _sha(kernel),
        }
        assert recorded["torch"] == {"bench/__init__.py": _sha(SUBJECT)}
    assert sys.modules["tinyops.ops.k"] is installed  # nothing of either side was imported here
    # The confirming A/B ran in a worker of its own, which imported the kernel modules anew.
    processes = set(ran_in.read_text().split())
    assert len(processes) == 2 and str(os.getpid()) not in processes


def test_a_src_layout_not_installed_loads_from_its_checkout(clean_imports, tmp_path):
    # No install, nothing on sys.path: the subject's absolute import finds the checkout's src/.
    repo = src_layout_repo(tmp_path / "repo")
    loaded = load_subject(repo / "bench")
    assert loaded.implementations["triton"].fn(2) == 4
    assert Path(loaded.modules["tinyops.ops.k"].__file__) == repo / "src" / "tinyops" / "ops" / "k.py"
    assert "tinyops" not in sys.modules and "tinyops.ops.k" not in sys.modules


@SHARING_INSTALLS
def test_with_the_isolation_off_the_ab_is_refused_not_run_on_one_checkout(
    gpu, clean_imports, installs, tmp_path, monkeypatch
):
    # The control: the subject imported as Python would import it, both sides get the installed
    # (head's) kernel, and the provenance check refuses the run in one line.
    repo, prefix = installs("pth")
    use_install(prefix)
    monkeypatch.setattr(isolation, "own_imports", lambda root: contextlib.nullcontext({}))
    result = _ab(repo, tmp_path / "ab")
    assert result.exit_code == 2, result.output
    kernel = (repo / "src" / "tinyops" / "ops" / "k.py").resolve()
    assert result.output.strip().splitlines() == [
        f"perfbot: error: implementation 'triton': both sides ran {kernel}, but the checkouts differ in "
        "src/tinyops/ops/k.py; one checkout would be measured twice (see docs/subject.md, "
        "'How each side's code is loaded')"
    ]
    assert [p.name for p in (tmp_path / "ab").iterdir()] == ["error.txt"]  # the line, for the PR comment


def test_a_dry_run_shows_each_sides_digests_without_measuring(clean_imports, tmp_path):
    # No fake GPU: nothing is measured (a GPU primitive would fail on this machine).
    repo = src_layout_repo(tmp_path / "repo")
    result = CliRunner().invoke(perfbot, ["ab", "HEAD~1", "--project", str(repo), "--dry-run"])
    assert result.exit_code == 0, result.output
    sides = result.output.split("head's implementations")
    assert "  triton (under test):\n    bench/__init__.py" in sides[0]
    assert f"    src/tinyops/ops/k.py {_sha(BASE_KERNEL)}\n" in sides[0]
    assert f"    src/tinyops/ops/k.py {_sha(HEAD_KERNEL)}\n" in sides[1]
    assert "note:" not in result.output  # the kernel is reached: nothing to warn of
    assert f"base: HEAD~1 = {_git(repo, 'rev-parse', 'HEAD~1')}" in result.output
    assert "Triton: both sides pin" in result.output and "benchmarks per side: base 4, head 4" in result.output
    assert not (repo / "perfbot-ab").exists()  # nothing written


@SHARING_INSTALLS
def test_a_dry_run_is_refused_where_the_run_would_be(clean_imports, installs, monkeypatch):
    repo, prefix = installs("pth")
    use_install(prefix)
    monkeypatch.setattr(isolation, "own_imports", lambda root: contextlib.nullcontext({}))
    result = CliRunner().invoke(perfbot, ["ab", "HEAD~1", "--project", str(repo), "--dry-run"])
    assert result.exit_code == 2, result.output
    assert "one checkout would be measured twice" in result.output and len(result.output.strip().splitlines()) == 1


def test_an_ab_without_a_regression_policy_is_judged_with_perfbots_defaults_and_says_so(clean_imports, tmp_path):
    # As a new repository starts: no thresholds.yaml. The dry run says what the run would judge with.
    repo = src_layout_repo(tmp_path / "repo")
    (repo / "thresholds.yaml").unlink()
    result = CliRunner().invoke(perfbot, ["ab", "HEAD~1", "--project", str(repo), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        f"perfbot: note: {repo / 'thresholds.yaml'}: no such file; judging with perfbot's defaults "
        f"({DEFAULT_PATH}); copy that file there to set the project's own"
    ]
    assert f"  judged with: {DEFAULT_PATH}\n" in result.stdout
    policy = tmp_path / "policy.yaml"
    shutil.copy(ROOT / "thresholds.yaml", policy)
    given = CliRunner().invoke(
        perfbot, ["ab", "HEAD~1", "--project", str(repo), "--dry-run", "--thresholds", str(policy)]
    )
    assert given.exit_code == 0, given.output
    assert f"  judged with: {policy}\n" in given.output and "note:" not in given.stderr


def test_an_ab_without_a_regression_policy_notes_the_defaults_in_its_report(gpu, clean_imports, tmp_path):
    repo = src_layout_repo(tmp_path / "repo")
    (repo / "thresholds.yaml").unlink()
    result = _ab(repo, tmp_path / "ab")
    assert result.exit_code in (0, 1), result.output
    summary = json.loads((tmp_path / "ab" / "comparison.json").read_text())
    assert summary["notes"][0] == DEFAULT_NOTE and summary["policy"] == "default-thresholds.yaml"
    assert summary["policy_change"] == []  # neither side has one: the note says what judged
    assert f"- {DEFAULT_NOTE}" in (tmp_path / "ab" / "comment.md").read_text().replace("\\", "")


def test_the_triton_kernels_of_the_packages_imported_by_name_are_loaded_anew(clean_imports, tmp_path):
    pytest.importorskip("triton")
    repo = src_layout_repo(tmp_path / "repo")
    (repo / "src" / "tinyops" / "ops" / "k.py").write_text(
        HEAD_KERNEL
        + textwrap.dedent(
            """
            from triton.runtime.jit import JITFunction


            def _kernel(x_ptr, n):
                pass


            kernel = JITFunction(_kernel)  # as triton.jit makes it off the interpreter
            """
        )
    )
    loaded = load_subject(repo / "bench")
    assert loads.triton_kernels(loaded.module) == []  # not in sys.modules: found only through the load
    (found,) = loads.triton_kernels(loaded.module, loaded.modules.values())
    assert found is loaded.modules["tinyops.ops.k"].kernel


GPU_KERNEL = """
import torch
import triton
import triton.language as tl


@triton.jit
def _double(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)


def scale(x):
    y = torch.empty_like(x)
    for _ in range(LAUNCHES):
        _double[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    return y
"""


@pytest.mark.gpu
def test_on_the_gpu_an_editable_src_layout_times_each_sides_own_triton_kernel(clean_imports, tmp_path):
    # Real Triton kernels, compiled and captured in one process: the head's launches its kernel
    # twice (the same result, twice the time), the base's once.
    repo = src_layout_repo(tmp_path / "repo")
    kernel = repo / "src" / "tinyops" / "ops" / "k.py"
    (repo / "bench" / "__init__.py").write_text(SUBJECT.replace('"n": 33', '"n": 1 << 24'))
    for launches, message in ((1, "base"), (2, "head")):
        kernel.write_text(GPU_KERNEL.replace("LAUNCHES", str(launches)))
        _git(repo, "commit", "-qam", message)
    result = _ab(repo, tmp_path / "ab", "--max-samples", "200")  # not installed: found by isolation alone
    assert result.exit_code == 1, result.output
    rows = json.loads((tmp_path / "ab" / "comparison.json").read_text())["comparisons"]
    ratios = {
        (r["benchmark"]["case"], r["benchmark"]["kernel"]): r["current_median_ms"] / r["baseline_median_ms"]
        for r in rows
    }
    assert 1.6 < ratios[("odd", "triton")] < 2.4 and 0.95 < ratios[("odd", "torch")] < 1.05, ratios
    digests = [
        json.loads((tmp_path / "ab" / f"{side}.json").read_text())["settings"]["sources"]["triton"]
        for side in ("base", "head")
    ]
    assert digests[0]["src/tinyops/ops/k.py"] != digests[1]["src/tinyops/ops/k.py"]
    same = _ab(repo, tmp_path / "aa", "--max-samples", "200", base="HEAD")
    assert same.exit_code == 0, same.output  # the head against itself: its own kernel on both sides


def _imports_the_kernel_late(repo: Path) -> None:
    """The subject imports the kernel only when the implementation runs, in both commits."""
    subject = repo / "bench" / "__init__.py"
    for rev in ("HEAD~1", "HEAD"):
        _git(repo, "checkout", "-q", rev)
        late = subject.read_text().replace("from tinyops.ops.k import scale\n", "")
        subject.write_text(
            late.replace("    return scale(x)", "    from tinyops.ops.k import scale\n\n    return scale(x)")
        )
        _git(repo, "commit", "-qam", "import the kernel late")
        _git(repo, "branch", "-f", "late-" + rev.replace("~", "-"))
    _git(repo, "checkout", "-q", "late-HEAD")


@SHARING_INSTALLS
def test_a_kernel_imported_only_when_it_runs_is_refused_not_run_twice(gpu, clean_imports, installs, tmp_path):
    # By name, the head's copy: what both sides would run. The module's install, whose repository
    # this test moves on to other commits, and back to its branch after.
    repo, prefix = installs("pth")
    use_install(prefix)
    branch = _git(repo, "rev-parse", "--abbrev-ref", "HEAD")
    try:
        _imports_the_kernel_late(repo)
        _slower_where_the_head_kernel_ran(gpu, repo)
        result = CliRunner().invoke(
            perfbot,
            ["ab", "late-HEAD-1", "--project", str(repo), "--samples", "12", "--out-dir", str(tmp_path / "ab")],
        )
    finally:
        _git(repo, "checkout", "-q", branch)
        _git(repo, "branch", "-q", "-D", "late-HEAD-1", "late-HEAD")
    assert _git(repo, "status", "--porcelain") == ""  # as the other tests of the install find it
    assert result.exit_code == 2, result.output
    assert "tinyops" in result.output and "was imported when an implementation first ran" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_dry_run_warns_of_a_kernel_it_cannot_follow(clean_imports, tmp_path):
    # The kernel imported only when the implementation runs: nothing beyond the subject is found.
    repo = src_layout_repo(tmp_path / "repo")
    subject = repo / "bench" / "__init__.py"
    late = subject.read_text().replace("from tinyops.ops.k import scale\n", "")
    late = late.replace("    return scale(x)", "    from tinyops.ops.k import scale\n\n    return scale(x)")
    subject.write_text(late)
    _git(repo, "commit", "-qam", "import the kernel late")
    result = CliRunner().invoke(perfbot, ["ab", "HEAD~1", "--project", str(repo), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "note: triton reaches no file beyond the subject package" in result.output
    assert "note: torch" not in result.output  # a baseline: not the code under test


# The subject package imported by its own name, from inside it: each form of the import.
SELF_IMPORTS = {
    "from selfish.kern import scale": "scale(x)",
    "from selfish import kern": "kern.scale(x)",
    "import selfish.kern": "selfish.kern.scale(x)",
    "from . import kern": "kern.scale(x)",  # the relative form, for comparison
}


def self_importing_repo(root: Path, statement: str, late: bool = False) -> Path:
    """A project whose subject package `selfish` imports its own module kern.py by the package's
    name (`statement`), at module level or, `late`, when the implementation first runs; committed
    twice: base, then head, which differ only in kern.py."""
    commit = load_project_config(ROOT).triton_commit
    (root / "selfish").mkdir(parents=True)
    (root / "pyproject.toml").write_text(f'[tool.perfbot]\ntriton-commit = "{commit}"\nkernels = "selfish"\n')
    shutil.copy(ROOT / "thresholds.yaml", root / "thresholds.yaml")
    call = SELF_IMPORTS[statement]
    body = f"    {statement}\n    return {call}" if late else f"    return {call}"
    subject = SUBJECT.replace("from tinyops.ops.k import scale\n", "" if late else statement + "\n")
    subject = subject.replace("    return scale(x)", body)
    (root / "selfish" / "__init__.py").write_text(subject)
    (root / "selfish" / "kern.py").write_text(BASE_KERNEL)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    (root / "selfish" / "kern.py").write_text(HEAD_KERNEL)
    _git(root, "commit", "-qam", "head")
    return root


@pytest.fixture
def clean_self_imports():
    yield
    for name in [n for n in sys.modules if n.partition(".")[0] == "selfish"]:
        del sys.modules[name]


@pytest.mark.parametrize("statement", quick_first(1, sorted(SELF_IMPORTS)))
def test_a_subject_that_imports_itself_by_name_runs_each_sides_own_copy(gpu, clean_self_imports, tmp_path, statement):
    """`from selfish import kern` and `from selfish.kern import scale` alike (and the relative
    form): each side of the A/B runs, and records, its own checkout's kern.py."""
    repo = self_importing_repo(tmp_path / "repo", statement)
    dry = CliRunner().invoke(perfbot, ["ab", "HEAD~1", "--project", str(repo), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    base, head = dry.output.split("head's implementations")
    assert f"selfish/kern.py {_sha(BASE_KERNEL)}" in base and f"selfish/kern.py {_sha(HEAD_KERNEL)}" in head
    _slower_where_the_head_kernel_ran(gpu, tmp_path)
    # One case: which copy each side runs and records is the implementation's, the same in each.
    result = _ab(repo, tmp_path / "ab", "--case", "odd")
    assert result.exit_code == 1, result.output  # the head's kernel, slower, ran on the head's side only
    for side, kernel in (("base", BASE_KERNEL), ("head", HEAD_KERNEL)):
        recorded = json.loads((tmp_path / "ab" / f"{side}.json").read_text())["settings"]["sources"]
        assert recorded["triton"]["selfish/kern.py"] == _sha(kernel)
    assert not [n for n in sys.modules if n.partition(".")[0] == "selfish"]  # none left behind


@pytest.mark.parametrize("statement", ["from selfish.kern import scale", "from selfish import kern"])
def test_a_subject_importing_itself_by_name_only_when_it_runs_is_refused(gpu, clean_self_imports, tmp_path, statement):
    """Imported at the implementation's first call, both forms would give both sides whichever
    copy Python finds: both refused in one line (exit 2), with the repository on sys.path (where
    Python finds the head's copy)."""
    repo = self_importing_repo(tmp_path / "repo", statement, late=True)
    sys.path.insert(0, str(repo))
    try:
        result = _ab(repo, tmp_path / "ab")
    finally:
        sys.path.remove(str(repo))
    assert result.exit_code == 2, result.output
    assert "selfish" in result.output and "was imported when an implementation first ran" in result.output
    assert len(result.output.strip().splitlines()) == 1
