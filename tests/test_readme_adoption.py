"""The README's adoption path, run verbatim: a generated repository of a src/ layout with two
kernel families (GeGLU calling libdevice's tanh, RMSNorm libdevice's rsqrt), `perfbot init` once
per kernel, the marked places filled in as a user would, the two lines added, and `perfbot check`
on the CPU, of both families and of one."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from perfbot.cli import perfbot
from perfbot.measuring import interpreted_libdevice
from tests.conftest import ROOT
from tests.test_init import BASELINE, KERNEL, SHA, _fill
from tests.test_init import FILLED as FILLED_RMSNORM
from tests.test_runner_cpu import _git

# A whole adoption, with perfbot subprocesses on kernels in Triton's interpreter: the slow tier.
# One group: the adoption is run once, by one worker (the `adoption` fixture).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("readme-adoption")]

GEGLU = '''\
"""GeGLU in Triton: y = gelu_tanh(a) * b, elementwise, gelu_tanh(a) = a/2 (1 + tanh(k (a + 0.044715 a^3)))."""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _geglu_kernel(a_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    a = tl.load(a_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
    inner = 0.7978845608028654 * (a + 0.044715 * a * a * a)
    y = 0.5 * a * (1.0 + libdevice.tanh(inner)) * b
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=inside)


def geglu(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if a.shape != b.shape:
        raise ValueError(f"geglu: a and b must have one shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    a, b = a.contiguous(), b.contiguous()
    y = torch.empty_like(a)
    _geglu_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, y, a.numel(), BLOCK=1024)
    return y
'''
# test_init's RMSNorm, its rsqrt libdevice's.
RMSNORM = KERNEL.replace(
    "import triton.language as tl\n", "import triton.language as tl\nfrom triton.language.extra import libdevice\n"
).replace("tl.rsqrt(", "libdevice.rsqrt(")
# What a user writes into the places init marked, per family: each marked line replaced.
FILLED = {
    "geglu": {
        '    raise NotImplementedError("perfbot init: write the float64 reference")\n': (
            "    return torch.nn.functional.gelu(a.double(), approximate='tanh') * b.double()\n"
        ),
        '    raise NotImplementedError("perfbot init: write the PyTorch baseline")\n': (
            "    return torch.nn.functional.gelu(a, approximate='tanh') * b\n"
        ),
    },
    "rmsnorm": {**FILLED_RMSNORM, **BASELINE},
}
# The cases, as the user sets them: GeGLU's quick suite of its own shapes; RMSNorm's odd case
# fewer rows and columns, still odd and in float16 (Triton's interpreter runs a program per row).
ODD = "    - {name: odd, rows: 37, cols: 200, dtype: float16}\n"
SUITES = {
    "geglu": {ODD: "    - {name: odd, rows: 9, cols: 41}\n"},
    "rmsnorm": {ODD: "    - {name: odd, rows: 7, cols: 45, dtype: float16}\n"},
}


def _readme_commands() -> list[str]:
    """The fenced sh block right under the README's "### Two kernels, step by step"."""
    text = (ROOT / "README.md").read_text()
    found = re.search(r"(?ms)^### Two kernels, step by step\n.*?^```sh\n(.*?)^```\n", text)
    assert found is not None, "README.md: no sh block under ### Two kernels, step by step"
    return found.group(1).splitlines()


def existing_repository(root: Path) -> Path:
    """An existing repository: src/mypkg/ops/geglu.py and rmsnorm.py, one commit, no perfbot."""
    ops = root / "src" / "mypkg" / "ops"
    ops.mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "mypkg"\nversion = "0.1"\n')
    (root / "src" / "mypkg" / "__init__.py").write_text("")
    (ops / "__init__.py").write_text("")
    (ops / "geglu.py").write_text(GEGLU)
    (ops / "rmsnorm.py").write_text(RMSNORM)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "kernels")
    return root


def _shell(tmp_path: Path) -> dict[str, str]:
    """The user's shell: `perfbot` on PATH is this checkout's, in a process of its own, with the
    Triton commit to pin in the environment and nothing that chose Triton's interpreter yet."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "perfbot"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m perfbot "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env["PERFBOT_TRITON_COMMIT"] = SHA
    return env


@dataclass(frozen=True)
class Adoption:
    """The README's two-kernel steps up to its checks, run once for the module in the user's
    shell: the repository as they leave it (`written`) and the same committed on main
    (`committed`), each for a test to copy; what each command printed; the checks still to run."""

    written: Path
    committed: Path
    outputs: list[str]
    checks: list[str]
    env: dict[str, str]


@pytest.fixture(scope="module")
def adoption(tmp_path_factory: pytest.TempPathFactory) -> Adoption:
    """Each `perfbot init` is a process of its own that imports PyTorch: run once here, not once
    per test (the module is one xdist group, so one worker runs it)."""
    root = tmp_path_factory.mktemp("readme")
    repo = existing_repository(root / "written")
    env = _shell(root)
    commands = _readme_commands()
    first_check = next(at for at, line in enumerate(commands) if line.startswith("perfbot check"))
    checks = commands[first_check:]
    assert all(line.startswith("perfbot check") for line in checks), checks  # the adoption comes first
    outputs = []
    for line in commands[:first_check]:
        if line.startswith("#"):  # the user's part: what init marked, written
            for family in ("geglu", "rmsnorm"):
                _fill(repo / "perf" / family / "__init__.py", FILLED[family])
                _fill(repo / "perf" / family / "suites.yaml", SUITES.get(family, {}))
            continue
        done = subprocess.run(line, shell=True, cwd=repo, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
        outputs.append(done.stdout)
    committed = _copy(repo, root / "committed")
    _git(committed, "branch", "-M", "main")
    _git(committed, "add", "-A")
    _git(committed, "commit", "-qm", "perf: two families")
    return Adoption(repo, committed, outputs, checks, env)


def _copy(repo: Path, to: Path) -> Path:
    shutil.copytree(repo, to, symlinks=True)
    return to


def test_the_readmes_two_kernel_path_ends_in_a_passing_check_of_each_family(adoption: Adoption, tmp_path: Path):
    assert "libdevice.rsqrt(" in RMSNORM and "tl.rsqrt(" not in RMSNORM
    commands = _readme_commands()
    assert [line.split()[:2] for line in commands if line.startswith("perfbot")] == [["perfbot", "init"]] * 2 + [
        ["perfbot", "check"]
    ] * 2
    # The README's lines before its checks ran in the fixture, in order; its checks run here.
    repo = _copy(adoption.written, tmp_path / "repo")
    outputs = list(adoption.outputs)
    for line in adoption.checks:
        done = subprocess.run(line, shell=True, cwd=repo, env=adoption.env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
        outputs.append(done.stdout)
    second_init, both, one = outputs[1], outputs[-2], outputs[-1]
    # The lines the README appends are the ones the second init says to add.
    assert "from .rmsnorm import subject as rmsnorm" in second_init and "subjects.append(rmsnorm)" in second_init
    assert "perfbot check: geglu+rmsnorm on cpu" in both and "8 right, 0 wrong, of 8" in both
    assert "geglu/quick" in both and "rmsnorm/quick" in both and "rmsnorm/rmsnorm" in both
    assert "4 right, 0 wrong, of 4" in one and "geglu/" not in one


def _dry_run(repo: Path, *args: str) -> Result:
    """`perfbot ab ARGS --dry-run` on the adopted repository, in this process: the dry run loads
    both sides in a child of its own either way (a fork of this one), and the user's shell around
    perfbot is the README's checks' above."""
    arguments = ["ab", *args, "--dry-run", "--project", str(repo)]
    return CliRunner().invoke(perfbot, arguments, env={"PERFBOT_TRITON_COMMIT": SHA})


def test_an_aa_of_the_readmes_two_families_lists_no_declaration_change(
    adoption: Adoption, tmp_path: Path, gpu, monkeypatch
):
    # Both families' quick suites hold a case of one shape (rows 4, cols 64): a run times it once
    # per family, and neither the dry run nor the A/A's report may take that for a change.
    repo = _copy(adoption.committed, tmp_path / "repo")
    dry = _dry_run(repo, "main", "main")
    assert dry.exit_code == 0, dry.output
    assert "the base's suites: geglu/quick, geglu/pr, rmsnorm/quick, rmsnorm/pr;" in dry.stdout
    assert "declarations differ" not in dry.stdout
    one_case = _dry_run(repo, "main", "main", "--case", "small")
    assert one_case.exit_code == 0 and "declarations differ" not in one_case.stdout, one_case.output
    monkeypatch.setenv("PERFBOT_TRITON_COMMIT", SHA)
    interpreted_libdevice.install()  # the kernels call libdevice, which a GPU has and the interpreter lacks
    out = tmp_path / "aa"
    arguments = [
        "ab",
        "main",
        "main",
        "--project",
        str(repo),
        "--suite",
        "quick",
        "--samples",
        "10",
        "--out-dir",
        str(out),
    ]
    result = CliRunner().invoke(perfbot, arguments)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "comparison.json").read_text())
    assert summary["declaration_changes"] == []
    assert "declarations differ" not in (out / "comment.md").read_text()
    timed = {(row["benchmark"]["kernel"], row["benchmark"]["case"]) for row in summary["comparisons"]}
    assert {("geglu/geglu", "small"), ("rmsnorm/rmsnorm", "small"), ("rmsnorm/rmsnorm", "odd")} <= timed


def test_an_ab_against_a_base_without_the_subject_names_the_revision_and_the_fix(adoption: Adoption, tmp_path: Path):
    # The subject is committed on a branch only: main, the base, has no perf/ yet.
    repo = _copy(adoption.committed, tmp_path / "repo")
    _git(repo, "checkout", "-q", "-b", "adopt")
    _git(repo, "branch", "-f", "main", "HEAD~1")
    done = _dry_run(repo, "main", "adopt")
    assert done.exit_code == 2, done.output
    [line] = done.stderr.splitlines()
    assert line.startswith("perfbot: error: revision 'main' (") and "has no perf/__init__.py" in line
    assert "commit the subject on 'main' first" in line and "perfbot-ab-" not in line


def test_a_broken_subject_at_a_revision_is_named_by_the_revision_and_its_path(adoption: Adoption, tmp_path: Path):
    # Committed broken, mended in the checkout: the base, HEAD, is the broken one.
    repo = _copy(adoption.committed, tmp_path / "repo")
    listing = repo / "perf" / "__init__.py"
    mended = listing.read_text()
    listing.write_text("subjects = 5\n")
    _git(repo, "commit", "-qam", "perf: broken")
    listing.write_text(mended)
    done = _dry_run(repo, "HEAD")
    assert done.exit_code == 2, done.output
    [line] = done.stderr.splitlines()
    assert line.startswith("perfbot: error: HEAD:perf: subjects must be a non-empty list"), line
