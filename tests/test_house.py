"""The habits: ruff (lint and format), mypy and import-linter pass on the tree, as configured in
pyproject.toml, and the pre-commit configuration runs the same tools."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

# ruff, mypy and import-linter over the whole tree: a minute or more, in the slow tier (CI runs it).
pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    "command",
    [["ruff", "check", "."], ["ruff", "format", "--check", "."], ["mypy"], ["lint-imports"]],
    ids=["ruff", "ruff-format", "mypy", "import-linter"],
)
def test_the_tree_passes(command: list[str]):
    done = subprocess.run([str(BIN / command[0]), *command[1:]], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_pre_commit_runs_the_same_checks():
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    entries = {hook["entry"].split()[0] for repo in config["repos"] for hook in repo["hooks"]}
    assert entries == {"ruff", "mypy", "lint-imports"}
    done = subprocess.run(
        [str(BIN / "pre-commit"), "validate-config", ".pre-commit-config.yaml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_perfbot_knows_no_subject():
    """perfbot/ measures any subject: no name or formula of this repository's GeGLU is left in it."""
    words = re.compile(r"geglu|gelu|gemm|eager|\bfused|approximate|tanh|cublas|matmul|M×K|t5-v1|gemma", re.IGNORECASE)
    # libdevice's functions, given to Triton's interpreter by name, are every kernel's, not GeGLU's
    libdevice = re.compile(r'"a?tanh": np\.(arc)?tanh,')
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted((ROOT / "perfbot").rglob("*"))
        if path.suffix in (".py", ".j2")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if words.search(line) and not (path.name == "interpreted_libdevice.py" and libdevice.fullmatch(line.strip()))
    ]
    assert not found, "\n".join(found)


def test_every_subpackage_has_its_layer_and_the_subject_is_type_checked():
    # A module the layers contract does not name may import anything: each of perfbot's
    # subpackages and top modules is placed in it, so that the picture of the architecture is whole.
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]
    layers = next(c for c in tool["importlinter"]["contracts"] if c["type"] == "layers")["layers"]
    placed = {name.strip() for layer in layers for name in layer.split("|")}
    present = {
        f"perfbot.{path.stem}"
        for path in (ROOT / "perfbot").iterdir()
        if (path.is_dir() and (path / "__init__.py").is_file()) or path.suffix == ".py"
    } - {"perfbot.__init__", "perfbot.__main__"}
    assert present == placed, (sorted(present - placed), sorted(placed - present))
    # kernels/ is this repository's subject, its code checked as perfbot's is.
    assert "kernels" in tool["mypy"]["files"]
    assert not [o for o in tool["mypy"]["overrides"] if any(m.startswith("kernels") for m in o["module"])]


def test_the_readme_s_xdist_groups_keep_their_tests_on_one_worker(tmp_path: Path):
    """The README's test command spreads the tests over the cores with `--dist loadgroup`, so that
    a module that builds something once (the wheel, a Triton cache) runs on one worker. With a
    pytest that pytest-xdist's groups do not work with (9.2), each worker built it again."""
    # A worker runs the last test it was sent only once told that no more will come, and the
    # nested run has hung on CI and here while its workers shut down. So each group ends in a
    # test that need not run: the run is read, then stopped, once the others have reported.
    # Two groups, so that neither worker is shut down unused. The ini file keeps pytest from
    # looking above tmp_path for a configuration.
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_grouped.py").write_text(
        "import os, pytest\n"
        "@pytest.mark.xdist_group('built-once')\n"
        "@pytest.mark.parametrize('n', range(7))\n"
        "def test_worker(n):\n"
        "    print(os.environ['PYTEST_XDIST_WORKER'])\n"
        "@pytest.mark.xdist_group('elsewhere')\n"
        "@pytest.mark.parametrize('n', range(2))\n"
        "def test_other(n):\n"
        "    pass\n"
    )
    outer_worker = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    command = [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider"]

    def reported(output: str) -> bool:
        return (
            len(re.findall(r"PASSED .*@built-once", output)) >= 6
            and re.search(r"PASSED .*@elsewhere", output) is not None
        )

    output = _output_until(command, tmp_path, outer_worker, reported)
    assert " FAILED " not in output, output[-2000:]
    workers = set(re.findall(r"\[(gw\d)\].*PASSED .*@built-once", output))
    assert len(re.findall(r"PASSED .*@built-once", output)) >= 6 and len(workers) == 1, output[-2000:]


def _output_until(command: list[str], cwd: Path, env: dict[str, str], enough: Callable[[str], bool]) -> str:
    """Run a pytest until `enough(its output so far)`, then stop it: that output."""
    # A session of its own, so that stopping it stops its xdist workers too, which hold the pipe.
    inner = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []

    def read() -> None:
        assert inner.stdout is not None
        for line in inner.stdout:
            lines.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + 120
    try:
        while not enough("".join(lines)):
            if inner.poll() is not None and not reader.is_alive():
                pytest.fail(
                    f"pytest -n 2 ended (exit {inner.returncode}) before its results:\n" + "".join(lines)[-3000:]
                )
            if time.monotonic() > deadline:
                pytest.fail("pytest -n 2 hung before its results; its output so far:\n" + "".join(lines)[-3000:])
            time.sleep(0.1)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(inner.pid, signal.SIGKILL)
        inner.wait()
        reader.join(timeout=5)
    return "".join(lines)
