"""examples/rmsnorm, a repository of another kind of kernel, adopts perfbot from the outside:
its own pyproject.toml, package and suites. Here it is copied into a fresh git repository, as a
folder of it (as in a monorepo), and checked on the CPU for real; run, ab, sample and selftest
run with the GPU's primitives replaced (tests/fake_gpu.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.output.run_tables import run_markdown
from perfbot.records import results
from tests.conftest import ROOT

KERNEL = "rstd = tl.rsqrt(tl.sum(x * x, axis=0) / cols + eps)"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """examples/rmsnorm as the folder `kernels/rmsnorm` of a fresh repository of one commit."""
    repo = tmp_path / "repo"
    shutil.copytree(
        ROOT / "examples" / "rmsnorm", repo / "kernels" / "rmsnorm", ignore=shutil.ignore_patterns("__pycache__")
    )
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "rmsnorm")
    return repo / "kernels" / "rmsnorm"


def _perfbot(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """perfbot as a user runs it: a process of its own, where nothing chose the interpreter yet."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    return subprocess.run(
        [sys.executable, "-m", "perfbot", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="the CPU path: on a machine without a GPU")
@pytest.mark.slow
def test_check_passes_on_the_cpu_in_under_a_minute(example: Path, monkeypatch):
    # In this process: a fresh interpreter would only import PyTorch again. perfbot choosing
    # Triton's interpreter in a process where nothing chose it yet, and the real entry point's
    # exit codes: the broken kernel's check below, and tests/test_readme_adoption.py's checks.
    monkeypatch.chdir(example)
    started = time.monotonic()
    done = CliRunner().invoke(perfbot, ["check", "--suite", "quick", "--variant", "offset=all"])
    assert done.exit_code == 0, done.output
    assert time.monotonic() - started < 60
    assert "perfbot check: rmsnorm on cpu" in done.stdout
    assert "21 right, 0 wrong, of 21" in done.stdout  # 3 cases: 3 implementations x 2 offsets, and copy


@pytest.mark.slow
def test_a_broken_kernel_fails_the_check_with_exit_1(example: Path):
    kernel = example / "rmsnorm" / "kernel.py"
    assert KERNEL in kernel.read_text()
    kernel.write_text(kernel.read_text().replace(KERNEL, KERNEL.replace("/ cols", "/ (cols + 1)")))
    done = _perfbot(example, "check")
    assert done.returncode == 1, done.stdout + done.stderr
    # the one-pass path, in both offsets; long-row takes the other path
    assert "wrong result" in done.stdout and "17 right, 4 wrong, of 21" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_run_speaks_the_subjects_language(gpu, example: Path, tmp_path: Path):
    gpu.ms = lambda name, call: {"triton": 1.0, "torch": 1.5, "eager": 3.0, "copy": 0.8}[name]
    out = tmp_path / "run.json"
    done = CliRunner().invoke(
        perfbot, ["run", "--project", str(example), "--suite", "quick", "--samples", "10", "--out", str(out)]
    )
    assert done.exit_code == 0, done.output
    measured = results.load(out)
    assert measured.settings.subject == "rmsnorm" and measured.settings.under_test == ["triton"]
    assert measured.settings.bounds == ["copy"]
    assert {b.kernel for b in measured.benchmarks} == {"triton", "torch", "eager", "copy"}
    assert measured.benchmarks[0].shape == {"rows": 1, "cols": 64}
    assert "rows=37 cols=200" in done.output
    row = next(
        line for line in run_markdown(measured).splitlines() if "| odd | rows=37 cols=200 | float16 | triton |" in line
    )
    assert "| 1.50× torch |" in row  # the fastest baseline
    # the share of the bound's bandwidth: 0.8 ms / 1.0 ms, and the weight RMSNorm reads besides x (200 of 14,800)
    share = float(row.rsplit("|", 2)[1].removesuffix("% copy "))  # timings carry 0.2% of noise
    assert share == pytest.approx(100 * 0.8 * 15_000 / 14_800, abs=0.5)


@pytest.mark.slow
def test_ab_of_the_example_catches_a_slower_head(gpu, example: Path, tmp_path: Path):
    repo = example.parents[1]
    (example / "NOTES").write_text("head\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "head")
    gpu.ms = lambda name, call: 1.03 if name == "head:triton" else 1.0
    out = tmp_path / "ab"
    # One case, the one-row one: each block of rounds captures every benchmark anew, which runs the
    # Triton kernel in its interpreter, a program per row; more rows and cases only repeat that.
    arguments = ["--suite", "quick", "--case", "one-row", "--samples", "12", "--out-dir", str(out)]
    done = CliRunner().invoke(perfbot, ["ab", "HEAD~1", "--project", str(example), *arguments])
    assert done.exit_code == 1, done.output
    comment = (out / "comment.md").read_text()
    assert "confirmed by a second interleaved round" in comment
    assert "triton · quick/one-row · rows=1 cols=64 float32" in comment
    assert _git(repo, "worktree", "list").count("\n") == 0


def test_sample_times_one_benchmark_of_the_example(gpu, example: Path):
    done = CliRunner().invoke(
        perfbot,
        ["sample", "--project", str(example), "--suite", "quick", "--case", "odd", "--variant", "offset=1"],
    )
    assert done.exit_code == 0, done.output
    assert len(done.output.split()) == 20 and all(float(v) > 0 for v in done.output.split())


def test_selftest_refuses_a_wrong_kernel_before_timing_it(gpu, example: Path):
    kernel = example / "rmsnorm" / "kernel.py"
    kernel.write_text(kernel.read_text().replace(KERNEL, KERNEL.replace("/ cols", "/ (cols + 1)")))
    done = CliRunner().invoke(perfbot, ["selftest", "--project", str(example), "--suite", "quick", "--case", "odd"])
    assert done.exit_code == 1, done.output
    assert "triton on quick/odd: wrong result; nothing was timed" in done.output


def test_a_subject_whose_inputs_raise_is_refused_in_one_line(example: Path):
    init = example / "rmsnorm" / "__init__.py"
    text = init.read_text()
    init.write_text(
        text.replace(
            "    dtype, device = DTYPES[case.dtype], generator.device\n", '    raise ValueError("no such layout")\n'
        )
    )
    # In this process: the refusal is what is read here. The real entry point's exit code and its
    # one line on stderr, in a process of its own: the broken kernel's check above, and
    # tests/test_judged_apart.py's test_the_cli_refuses_a_family_that_ends_its_process_at_import.
    done = CliRunner().invoke(perfbot, ["check", "--project", str(example)])
    assert done.exit_code == 2, done.output
    assert "subject 'rmsnorm': inputs(case quick/one-row) raised ValueError: no such layout" in done.stderr
    assert done.stderr.strip().count("\n") == 0 and "Traceback" not in done.stderr


def test_sample_refuses_an_unknown_implementation(gpu, example: Path):
    done = CliRunner().invoke(perfbot, ["sample", "--project", str(example), "--kernel", "nope"])
    assert done.exit_code == 2 and "unknown implementation 'nope'" in done.output


def test_sample_finds_a_case_by_name_in_any_suite(gpu, example: Path):
    done = CliRunner().invoke(perfbot, ["sample", "--project", str(example), "--case", "long-row", "--samples", "10"])
    assert done.exit_code == 0, done.output
    assert len(done.output.split()) == 10
