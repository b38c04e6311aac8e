"""`perfbot explain`: the compiled Triton kernels of two revisions, side by side, nothing timed.

Real compiles, for the H200, on this CPU (perfbot/compiling/offline.py), of a generated git
repository's small Triton kernels: its second commit changes a constexpr (BLOCK), its third
moves that kernel down its file and breaks another. Then the same on this repository's own
kernels, and `--mode` on a generated training kernel (tests/backward_subject.py). The runs are
the CLI's, one after another in a process of their own without TRITON_INTERPRET, which conftest
sets for this one and under which Triton interprets kernels (its own library's too, as it
imports them) instead of compiling them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import NamedTuple

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from tests.backward_subject import backward_repository
from tests.conftest import ROOT
from tests.test_runner_cpu import _git

# Its module-scoped fixtures (a shared Triton cache) are built once, on one pytest-xdist worker.
pytestmark = pytest.mark.xdist_group("explain")

KERNEL = """import torch
import triton
import triton.language as tl

RMS_BLOCK = {block}
{moved}

@triton.jit
def _rms_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    total = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * cols + offsets, mask=offsets < cols, other=0.0).to(tl.float32)
        total += x * x
    scale = tl.rsqrt(tl.sum(total, axis=0) / cols + 1e-6)
    for start in range(0, cols, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * cols + offsets, mask=offsets < cols, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * cols + offsets, x * scale, mask=offsets < cols)


@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) * {factor}, mask=offsets < n)


def rms(x):
    y = torch.empty_like(x)
    _rms_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=RMS_BLOCK)
    return y


def scaled(x):
    y = torch.empty_like(x)
    _scale_kernel[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
    return y
"""
SUBJECT = """import torch

from perfbot import Case, Subject, Suite

from .kernel import rms, scaled

WIDE = Case("small", "wide", {"rows": 8, "cols": 3000}, "float32")
subject = Subject(
    name="rows",
    inputs=lambda case, generator: (torch.randn(case.rows, case.cols, generator=generator, device=generator.device),),
    reference=lambda x: x.double() * torch.rsqrt((x.double() ** 2).mean(-1, keepdim=True) + 1e-6),
    tolerance={"float32": 1e-5},
    suites={"small": Suite("small", "one case", ("triton", "triton-scale", "torch"), (WIDE,))},
)
subject.implementation("triton", under_test=True)(rms)
subject.implementation("triton-scale", under_test=True, reference=lambda x: 2 * x.double())(scaled)
subject.implementation("torch")(lambda x: x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6))
"""
PYPROJECT = '[tool.perfbot]\ntriton-commit = "7c56a5e40f7fd928dfd5c72902d5def0097db73a"\nkernels = "rows"\n'
MOVED = "\n# Two lines more above the kernel: its line numbers change, its machine code does not.\n"


def _write(repo: Path, block: int, moved: str = "", factor: str = "2") -> None:
    (repo / "rows" / "kernel.py").write_text(KERNEL.format(block=block, moved=moved, factor=factor))


def _commit(repo: Path, message: str) -> None:
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three commits: BLOCK 256; BLOCK 2048; the rms kernel moved down and the scale kernel broken.
    Beside the third, on branch `pinned`, the second pinning another Triton commit, without its
    torch implementation."""
    repo = tmp_path_factory.mktemp("rows")
    (repo / "rows").mkdir()
    (repo / "pyproject.toml").write_text(PYPROJECT)
    (repo / "rows" / "__init__.py").write_text(SUBJECT)
    _write(repo, 256)
    _git(repo, "init", "-q")
    _commit(repo, "rms in blocks of 256")
    _write(repo, 2048)
    _commit(repo, "rms in blocks of 2048")
    _git(repo, "checkout", "-q", "-b", "pinned")  # the same, pinning another Triton, without torch's
    (repo / "pyproject.toml").write_text(PYPROJECT.replace("7c56a5e4", "0123abcd"))
    without = SUBJECT.rpartition('subject.implementation("torch")')[0].replace(', "torch")', ")")
    (repo / "rows" / "__init__.py").write_text(without)
    _commit(repo, "another Triton, and no torch implementation")
    _git(repo, "checkout", "-q", "-")
    _write(repo, 2048, moved=MOVED, factor="undefined_factor")
    _commit(repo, "rms moved down, scale broken")
    return repo


@pytest.fixture(scope="module")
def training(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/backward_subject.py's training kernel, committed, with one config per autotuned kernel
    (two would be timed, which needs the GPU)."""
    repo = backward_repository(tmp_path_factory.mktemp("training") / "repo")
    ops = repo / "gradlib" / "ops.py"
    ops.write_text(ops.read_text().replace("for b in (16, 32)", "for b in (16,)"))
    _git(repo, "init", "-q")
    _commit(repo, "mul")
    return repo


# `perfbot explain` run for each [folder, args, env] of the JSON list given, one after another,
# as the command line runs it in that folder (click's runner, exceptions left uncaught): a JSON
# line of what each did.
EXPLAINS = textwrap.dedent(
    """
    import json, os, sys
    from click.testing import CliRunner
    from perfbot.cli import perfbot
    from triton.runtime.cache import triton_key

    triton_key()  # Triton's digest of itself, which each run's child takes for its compiles: once, for every fork
    for folder, args, env in json.loads(sys.argv[1]):
        os.chdir(folder)
        done = CliRunner().invoke(perfbot, ["explain", *args], env=env, catch_exceptions=False)
        print(json.dumps([done.exit_code, done.stdout, done.stderr]), flush=True)
    """
)


class Explained(NamedTuple):
    exit_code: int
    stdout: str
    stderr: str
    out: Path  # its --out file


@pytest.fixture(scope="module")
def explained(rows: Path, training: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Explained]:
    """The runs the slow tests below check, in one process without TRITON_INTERPRET (each run's
    child, which compiles, is a fork of it, as of `perfbot`'s): a fresh interpreter for each
    would spend about as much on importing PyTorch as the run spends on its compiles. In this
    order: the second takes the first's compiles from their Triton cache, the test's own (so
    that the first compile of each kernel is a real one); so does the last, the training
    kernel's backward mode, from the one before, in a cache of their own."""
    folder = tmp_path_factory.mktemp("explained")
    cache = {"TRITON_CACHE_DIR": str(folder / "triton-cache")}
    modes_cache = {"TRITON_CACHE_DIR": str(folder / "modes-cache")}
    cases = ["--case", "odd", "--case", "odd-fp32", "--case", "gemma-7b-m16"]
    runs = {
        "changed block": (rows, ["HEAD~2", "pinned", "--kernel", "all"], cache),
        "moved and broken": (rows, ["HEAD~1", "HEAD"], cache),
        # Compiled anew on each side (no cache), from two worktrees: their paths differ, nothing else.
        "a-a": (rows, ["HEAD~1", "HEAD~1"], {"TRITON_ALWAYS_COMPILE": "1"}),
        "this repository": (ROOT, ["HEAD", "--suite", "quick", "--suite", "decode", *cases, "--mode", "forward"], {}),
        "every mode": (training, ["HEAD", "--suite", "quick", "--case", "odd"], modes_cache),
        "backward mode": (training, ["HEAD", "--suite", "quick", "--mode", "backward"], modes_cache),
    }
    asked = [
        [str(where), [*args, "--out", str(folder / f"{name}.json")], env] for name, (where, args, env) in runs.items()
    ]
    clean = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    clean["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [clean.get("PYTHONPATH")])])
    done = subprocess.run(
        [sys.executable, "-c", EXPLAINS, json.dumps(asked)],
        env=clean,
        capture_output=True,
        text=True,
        timeout=600 * len(runs),  # each run's time as when each had a process of its own
    )
    assert done.returncode == 0, done.stdout + done.stderr
    said = [json.loads(line) for line in done.stdout.splitlines()[-len(runs) :]]
    return {
        name: Explained(exit_code, stdout, stderr, folder / f"{name}.json")
        for name, (exit_code, stdout, stderr) in zip(runs, said, strict=True)
    }


def _rows(path: Path) -> dict[str, dict]:
    return {row["implementation"]: row for row in json.loads(path.read_text())["rows"]}


@pytest.mark.slow
def test_a_changed_block_shows_its_specialization_and_what_it_did(explained: dict[str, Explained]):
    done = explained["changed block"]
    assert done.exit_code == 0, done.stdout + done.stderr
    assert "the sides pin different Triton commits (base 7c56a5e40f7f, head 0123abcd0f7f)" in done.stderr
    assert "compiled for NVIDIA H200 without one" in done.stdout
    record = _rows(done.out)
    assert set(record) == {"triton", "triton-scale", "torch"}
    (changed,) = record["triton"]["change"]["kernels"]
    differences = {d["what"]: (d["baseline"], d["current"]) for d in changed["differences"]}
    assert changed["name"] == "_rms_kernel" and differences["BLOCK"] == (256, 2048)
    before, after = differences["registers"]
    assert before < after  # eight times the elements a thread holds
    assert {"TTGIR", "PTX", "cubin"} <= set(differences) and "source" not in differences  # its text is the same
    for side in ("base", "head"):
        (kernel,) = record["triton"][side]["compiled"]["kernels"]
        assert kernel["arch"] == "sm_90a" and kernel["occupancy"]["arch"] == "sm_90"
    assert record["triton-scale"]["change"] == {"kernels": [], "same_machine_code": True, "unknown": None}
    assert record["torch"]["change"] is None and record["torch"]["base"]["compiled"]["kernels"] == []
    assert record["torch"]["head"]["absent"] == "the base declares it; the head has no implementation of that name"
    table = done.stdout
    assert "│ _rms_kernel │ BLOCK" in table and "│ 256" in table and "│ 2048" in table
    assert "same machine code" in table and "base: no Triton kernel" in table
    assert "head: absent: the base declares it" in table
    assert "head: _rms_kernel (grid 8×1×1, 4 warps" in table  # every side's numbers, one line each
    assert "3 compiled side by side: 1 changed, 1 same machine code, 1 failed or absent on a side" in table


@pytest.mark.slow
def test_a_kernel_that_only_moved_has_the_same_machine_code_and_a_broken_one_is_one_line(
    explained: dict[str, Explained],
):
    done = explained["moved and broken"]
    assert done.exit_code == 0, done.stdout + done.stderr  # a kernel that fails to compile is reported
    record = _rows(done.out)
    assert record["triton"]["change"]["same_machine_code"] is True  # compiled without line info
    broken = record["triton-scale"]["head"]["failed"]
    assert broken.startswith("raised CompilationError: at ") and "undefined_factor is not defined" in broken
    assert record["triton-scale"]["base"]["compiled"]["kernels"][0]["name"] == "_scale_kernel"
    line = next(line for line in done.stdout.splitlines() if line.startswith("head: failed"))
    assert "undefined_factor" in line and "Traceback" not in done.stdout + done.stderr


@pytest.mark.slow
def test_an_a_a_has_the_same_machine_code_and_equal_digests(explained: dict[str, Explained]):
    done = explained["a-a"]  # compiled anew on each side, from two worktrees
    assert done.exit_code == 0, done.stdout + done.stderr
    for row in _rows(done.out).values():
        assert row["change"] == {"kernels": [], "same_machine_code": True, "unknown": None}
        base, head = (row[side]["compiled"]["kernels"] for side in ("base", "head"))
        digests = ("cubin_sha256", "ptx_sha256", "ttgir_sha256", "source_sha256")
        assert [[k[d] for d in digests] for k in base] == [[k[d] for d in digests] for k in head]
    assert "2 compiled side by side: 2 same machine code" in done.stdout


@pytest.fixture
def compiling(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process as explain's: Triton compiles (nothing here gets as far as compiling)."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["HEAD", "--case", "nope"], "no case 'nope' in the chosen suites; they have wide"),
        (["nope"], "'nope' is not a commit in"),
        (["HEAD", "HEAD~9"], "'HEAD~9' is not a commit in"),
        (["HEAD", "--suite", "large"], "unknown suite 'large'; known: small"),
        (["HEAD", "--kernel", "cuda"], "unknown implementation 'cuda'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(compiling, rows: Path, args: list[str], said: str):
    done = CliRunner().invoke(perfbot, ["explain", *args, "--project", str(rows)])
    assert done.exit_code == 2, done.output
    assert said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_triton_s_interpreter_is_refused_before_anything_is_loaded(rows: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    done = CliRunner().invoke(perfbot, ["explain", "HEAD", "--project", str(rows / "nowhere")])
    assert done.exit_code == 2
    assert "TRITON_INTERPRET=1 is set" in done.stderr and "env -u TRITON_INTERPRET" in done.stderr


@pytest.mark.slow
def test_this_repositorys_kernels_compile_on_the_cpu_on_both_paths_in_every_dtype(explained: dict[str, Explained]):
    """fused takes the TMA path for 16-bit inputs, except where the epilogue path stands in for it
    (quick/odd: 37 rows of K = 72, whose weight rows are not 32-byte aligned), and the pointer
    path for fp32 (TMA needs 16-bit here); fused-pointer the pointer path always: fp16
    (quick/odd), bf16 (decode), fp32."""
    done = explained["this repository"]
    assert done.exit_code == 0, done.stdout + done.stderr
    rows = json.loads(done.out.read_text())["rows"]
    found = {}
    for row in rows:
        for side in ("base", "head"):
            assert row[side]["failed"] is None, row[side]
            (kernel,) = row[side]["compiled"]["kernels"]
            found[(row["case"], row["dtype"], row["implementation"], side)] = (kernel["name"], kernel["instructions"])
    kernel_of = {(case, name): found[(case, dtype, name, "head")] for case, dtype, name, _ in found}
    name, instructions = kernel_of[("gemma-7b-m16", "fused")]
    assert name == "_geglu_tma_kernel" and instructions["tma"] > 0 and instructions["mma"] > 0
    name, instructions = kernel_of[("odd", "fused")]  # after cuBLAS's matmul, which is not Triton's
    assert name == "_geglu_epilogue_kernel" and instructions["mma"] == 0
    for case in ("odd", "gemma-7b-m16"):  # fp16, bf16
        assert kernel_of[(case, "fused-pointer")][0] == "_geglu_pointer_kernel"
    for implementation in ("fused", "fused-pointer"):
        assert kernel_of[("odd-fp32", implementation)][0] == "_geglu_pointer_kernel"
    assert {(case, dtype) for case, dtype, _, _ in found} == {
        ("odd", "float16"),
        ("odd-fp32", "float32"),
        ("gemma-7b-m16", "bfloat16"),
    }


def _kernels(out: Path) -> dict[tuple[str, str, str], list[str]]:
    """(case, mode, implementation) -> the names of the head's compiled kernels, in launch order."""
    rows = json.loads(out.read_text())["rows"]
    found = {}
    for row in rows:
        assert row["base"]["failed"] is None and row["head"]["failed"] is None, row
        names = [kernel["name"] for kernel in row["head"]["compiled"]["kernels"]]
        assert names == [kernel["name"] for kernel in row["base"]["compiled"]["kernels"]]
        found[(row["case"], row["mode"], row["implementation"])] = names
    return found


@pytest.mark.slow
def test_each_mode_compiles_what_it_times_and_mode_chooses(explained: dict[str, Explained]):
    """`--mode`: a backward row's compiled kernels are those its mode times, the backward's, as a
    run records them (the refusal of an unknown mode: tests/test_explain_modes.py)."""
    every, backward = explained["every mode"], explained["backward mode"]
    for done in (every, backward):
        assert done.exit_code == 0, done.stdout + done.stderr
    assert _kernels(every.out) == {
        ("odd", "forward", "triton"): ["_mul_kernel"],
        # The forward runs before, outside what is recorded, as a run times the backward alone.
        ("odd", "backward", "triton[backward]"): ["_mul_backward_kernel"],
        ("odd", "forward+backward", "triton[forward+backward]"): ["_mul_kernel", "_mul_backward_kernel"],
    }
    assert _kernels(backward.out) == {
        ("odd", "backward", "triton[backward]"): ["_mul_backward_kernel"],
        ("half", "backward", "triton[backward]"): ["_mul_backward_kernel"],
    }
    assert "odd (float32): triton[backward]" in backward.stdout


def test_the_subjects_run_in_a_process_of_their_own_and_ending_it_is_refused(compiling, rows: Path, tmp_path: Path):
    """explain loads both sides, and calls their code, in a child (measuring/compiled_sides.py): a
    head that ends that process at import is refused, exit 2, never a table and exit 0."""
    import shutil

    project = tmp_path / "rows"
    shutil.copytree(rows, project)
    pids = tmp_path / "pids"
    init = project / "rows" / "__init__.py"
    init.write_text(init.read_text() + f"\nopen({str(pids)!r}, 'a').write(f'{{__import__(\"os\").getpid()}}\\n')\n")
    init.write_text(init.read_text() + "import os; os._exit(0)\n")
    done = CliRunner().invoke(perfbot, ["explain", "HEAD", "--project", str(project)])
    assert done.exit_code == 2, done.output
    assert "ended (exit 0, as os._exit(0) would) before it answered" in done.stderr
    assert pids.read_text().split() and str(os.getpid()) not in pids.read_text().split()
