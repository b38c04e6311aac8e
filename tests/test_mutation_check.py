"""scripts/mutation_check.py on a tiny generated tree: a mutant that a weak test misses is
reported as survived and one that a strong test states is killed; the real files stay as they were."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

SCRIPT = ROOT / "scripts" / "mutation_check.py"
GATE = "def too_slow(ratio: float) -> bool:\n    return ratio > 1.05  # strictly slower than 5%\n"


def _tree(tmp_path: Path, module: str, test: str) -> Path:
    (tmp_path / "tests").mkdir(parents=True)
    (tmp_path / "gate.py").write_text(module)
    (tmp_path / "tests" / "test_gate.py").write_text(test)
    return tmp_path


def _check(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(SCRIPT), "--root", str(root), "--modules", "gate.py", "--tests", "tests", *args]
    # The tiny tests need none of the plugins installed here, and each mutant starts a pytest:
    # none is loaded (a fifth of its start), and no option is passed that one would take.
    quick = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTEST_ADDOPTS": ""}
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=quick)


@pytest.mark.slow
def test_a_boundary_the_tests_do_not_state_survives_and_one_they_state_is_killed(tmp_path: Path):
    weak = _tree(tmp_path / "weak", GATE, "from gate import too_slow\n\ndef test_it():\n    assert too_slow(2.0)\n")
    done = _check(weak, "--list-survivors", "--jobs", "2", "--fail-under", "100")
    assert done.returncode == 1, done.stderr  # under the score asked for
    # ">" to ">=" and "returns True at once" pass a test that only looks far from the boundary.
    assert "gate.py |       5 |   5 |      3 |        2 |       0 |   60%" in done.stdout
    assert "gate.py:2:12: ratio > 1.05  →  (ratio >= 1.05)" in done.stdout
    assert "gate.py:2:5: def too_slow: …  →  def too_slow: return True" in done.stdout
    assert (weak / "gate.py").read_text() == GATE  # the mutants were written into a copy

    strong = _tree(
        tmp_path / "strong",
        GATE,
        "from gate import too_slow\n\ndef test_it():\n    assert too_slow(1.06) and not too_slow(1.05)\n",
    )
    done = _check(strong, "--list-survivors", "--jobs", "2", "--fail-under", "100")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gate.py |       5 |   5 |      5 |        0 |       0 |  100%" in done.stdout
    assert "survived:" not in done.stdout


@pytest.mark.slow
def test_a_mutant_that_never_ends_is_a_timeout_counted_as_detected(tmp_path: Path):
    # The loop waits for a signal rather than spinning: the mutant that never ends then holds no
    # CPU for the seconds it takes to time out.
    module = (
        "import signal\n\n\ndef wait_for(ready):\n    while not ready():\n        signal.pause()\n    return True\n"
    )
    root = _tree(tmp_path, module, "from gate import wait_for\n\ndef test_it():\n    assert wait_for(lambda: True)\n")
    done = _check(root, "--timeout", "3")
    assert done.returncode == 0, done.stderr
    assert "gate.py |       2 |   2 |      1 |        0 |       1 |  100%" in done.stdout
    assert "timeout" in done.stderr


def test_tests_that_fail_unmutated_or_miss_the_copy_stop_the_check(tmp_path: Path):
    failing = _tree(tmp_path / "failing", GATE, "def test_it():\n    assert False\n")
    done = _check(failing)
    assert done.returncode != 0 and "do not pass unmutated" in done.stderr
    unrelated = _tree(tmp_path / "unrelated", GATE, "def test_it():\n    assert True\n")
    done = _check(unrelated)
    assert done.returncode != 0 and "do not test this copy" in done.stderr
