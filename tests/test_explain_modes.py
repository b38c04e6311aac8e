"""`perfbot explain --mode`: a backward row's compiled kernels are those its mode times, the
backward's, as a run records them. Real compiles, for the H200, on this CPU, of the generated
training kernel (tests/backward_subject.py) with one config per autotuned kernel (two would be
timed, which needs the GPU), in a process without TRITON_INTERPRET (as test_explain.py's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.backward_subject import backward_repository
from tests.conftest import ROOT
from tests.test_runner_cpu import _git

RUN = textwrap.dedent(
    """
    import json, os, sys
    from click.testing import CliRunner
    from perfbot.cli import perfbot

    os.chdir(sys.argv[1])
    for args in json.loads(sys.argv[2]):
        done = CliRunner().invoke(perfbot, ["explain", *args], catch_exceptions=False)
        print(json.dumps([done.exit_code, done.stdout, done.stderr]), flush=True)
    """
)


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


@pytest.mark.slow  # sm_90 compiles of every mode: about 7 CPU-s
def test_each_mode_compiles_what_it_times_and_mode_chooses(tmp_path: Path):
    repo = backward_repository(tmp_path / "repo")
    ops = repo / "gradlib" / "ops.py"
    ops.write_text(ops.read_text().replace("for b in (16, 32)", "for b in (16,)"))
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "mul")
    every, backward = tmp_path / "every.json", tmp_path / "backward.json"
    asked = [
        ["HEAD", "--suite", "quick", "--case", "odd", "--out", str(every)],
        ["HEAD", "--suite", "quick", "--mode", "backward", "--out", str(backward)],
    ]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env["TRITON_CACHE_DIR"] = str(tmp_path / "triton-cache")
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(repo), json.dumps(asked)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    said = [json.loads(line) for line in done.stdout.splitlines()[-len(asked) :]]
    for exit_code, stdout, stderr in said:
        assert exit_code == 0, stdout + stderr
    assert _kernels(every) == {
        ("odd", "forward", "triton"): ["_mul_kernel"],
        # The forward runs before, outside what is recorded, as a run times the backward alone.
        ("odd", "backward", "triton[backward]"): ["_mul_backward_kernel"],
        ("odd", "forward+backward", "triton[forward+backward]"): ["_mul_kernel", "_mul_backward_kernel"],
    }
    assert _kernels(backward) == {
        ("odd", "backward", "triton[backward]"): ["_mul_backward_kernel"],
        ("half", "backward", "triton[backward]"): ["_mul_backward_kernel"],
    }
    assert "odd (float32): triton[backward]" in said[1][1]


def test_an_unknown_mode_is_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from click.testing import CliRunner

    from perfbot.cli import perfbot

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    done = CliRunner().invoke(perfbot, ["explain", "HEAD", "--mode", "sideways", "--project", str(tmp_path)])
    assert done.exit_code == 2, done.output
    assert "--mode" in done.stderr and len(done.stderr.strip().splitlines()) <= 2, done.stderr
