"""examples/autotuned, a repository of `@triton.autotune`d kernels called through
`torch.autograd.Function`s (a row softmax over num_warps, a GELU over BLOCK_SIZE), as two kernel
families. Copied into a fresh git repository and checked on the CPU by `perfbot check`: every
config of both kernels is run and named, and a wrong mask planted in one config fails the check
in that config's rows."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import torch
import torch.nn.functional as F
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.compiling import tuning
from perfbot.measuring import interpreted_libdevice
from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "autotuned"
WARPS = ["1", "2", "4", "8", "16", "32"]
BLOCKS = ["64", "128", "256", "512", "1024"]
QUICK = {"softmax": ["odd", "odd-fp16", "power-of-two"], "gelu": ["odd", "odd-fp16"]}

# A wrong mask in the config of 8 warps: the softmax's configs differ in num_warps alone, which
# the kernel cannot read, so the planted bug gives that config a flag of its own to read.
SOFTMAX_PLANT = {
    "triton.Config({}, num_warps=warps)": 'triton.Config({"SHORT": int(warps == 8)}, num_warps=warps)',
    "    BLOCK_SIZE: tl.constexpr,\n": "    BLOCK_SIZE: tl.constexpr,\n    SHORT: tl.constexpr,\n",
    "    inside = cols < n_cols\n": "    inside = cols < n_cols - SHORT  # wrong: drops a row's last column\n",
}
# A wrong mask in the config of BLOCK_SIZE 256.
GELU_PLANT = {
    "    inside = offsets < n_elements\n": (
        "    inside = offsets < n_elements\n"
        "    if BLOCK_SIZE == 256:\n"
        "        inside = offsets < n_elements - 1  # wrong: drops the last element\n"
    ),
}


@pytest.fixture(autouse=True)
def wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")  # each row of the check's table on one line


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """examples/autotuned as a fresh repository of one commit."""
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "autotuned kernels")
    return repo


def _rows(output: str) -> list[tuple[str, str, str, str, str]]:
    """(suite, case, implementation, config, result) of each row of the check's table."""
    rows = []
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.split("│")[1:-1]]
        if len(cells) == 8 and cells[0].endswith("/quick"):
            rows.append((cells[0], cells[1], cells[3], cells[4], cells[7]))
    return rows


def _configs(rows: list, family: str, case: str, implementation: str, name: str | None = None) -> list[str]:
    """The config cell of each row of one case and implementation, in order; with `name`, the
    value of that parameter in it."""
    found = []
    for suite, c, i, config, _ in rows:
        if (suite, c, i) == (f"{family}/quick", case, f"{family}/{implementation}"):
            value = re.search(rf"\b{name}=(\w+)", config) if name else None
            found.append(value.group(1) if value else config)
    return found


def _plant(path: Path, edits: dict[str, str]) -> None:
    text = path.read_text()
    for old, new in edits.items():
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path.write_text(text)


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="the CPU path: on a machine without a GPU")
@pytest.mark.slow
def test_check_runs_every_config_of_both_kernels_on_the_cpu(example: Path):
    # In this process, the device left to perfbot to choose: a fresh interpreter would only import
    # PyTorch again. perfbot choosing Triton's interpreter, and libdevice in it, before a kernel is
    # imported, in a process where nothing chose them yet: tests/test_readme_adoption.py's checks.
    done = CliRunner().invoke(perfbot, ["check", "--project", str(example)])
    assert done.exit_code == 0, done.output
    assert "perfbot check: softmax+gelu on cpu" in done.stdout
    rows = _rows(done.stdout)
    for case in QUICK["softmax"]:
        assert _configs(rows, "softmax", case, "triton", "num_warps") == WARPS, case
    for case in QUICK["gelu"]:
        assert _configs(rows, "gelu", case, "triton", "BLOCK_SIZE") == BLOCKS, case
    for family, cases in QUICK.items():
        for case in cases:  # no autotuned kernel: one row each
            assert _configs(rows, family, case, "torch") == ["-"]
            assert _configs(rows, family, case, "copy") == ["-"]
    assert len(rows) == 3 * (6 + 2) + 2 * (5 + 2) and all(result == "right" for *_, result in rows)
    assert "38 right, 0 wrong, of 38" in done.stdout
    assert "configs checked" not in done.stdout  # all of them, none drawn as a sample


@pytest.mark.parametrize(
    ("family", "kernel", "edits", "name", "wrong", "total"),
    [
        pytest.param("softmax", "softmax.py", SOFTMAX_PLANT, "num_warps", "8", 24, marks=pytest.mark.slow),
        ("gelu", "gelu.py", GELU_PLANT, "BLOCK_SIZE", "256", 14),
    ],
)
def test_a_wrong_mask_in_one_config_fails_the_check_naming_it(
    example: Path, family: str, kernel: str, edits: dict, name: str, wrong: str, total: int
):
    _plant(example / "tunedkernels" / kernel, edits)
    done = CliRunner().invoke(perfbot, ["check", "--project", str(example), "--device", "cpu", "--family", family])
    assert done.exit_code == 1, done.output
    failed = [(case, i, config) for _, case, i, config, result in _rows(done.output) if result != "right"]
    # In every case, that config's row alone, named.
    assert [(case, i) for case, i, _ in failed] == [(case, f"{family}/triton") for case in QUICK[family]]
    assert all(re.search(rf"_{family}_kernel: .*\b{name}={wrong}\b", config) for *_, config in failed), failed
    assert f"{total - len(failed)} right, {len(failed)} wrong, of {total}" in done.output


def test_suites_lists_both_families(example: Path):
    done = CliRunner().invoke(perfbot, ["suites", "--project", str(example)])
    assert done.exit_code == 0, done.output
    for family in ("softmax", "gelu"):
        assert f"family {family}: {family}/triton (under test), {family}/torch, {family}/copy" in done.output
        for suite in ("quick", "pr"):
            assert f"{family}/{suite}:" in done.output
    for case in ("4096x4096", "8192x1024", "narrow-128", "8192x14336"):
        assert f"  {case} " in done.output


@pytest.fixture
def tunedkernels() -> Iterator[ModuleType]:
    """The example's kernel package, imported by path under a name of its own, then forgotten;
    without a GPU, its kernels run in Triton's interpreter, which perfbot gives libdevice's tanh."""
    interpreted_libdevice.install()  # before the GELU's module imports tanh by name
    name = "example_tunedkernels"
    package = EXAMPLE / "tunedkernels"
    spec = importlib.util.spec_from_file_location(
        name, package / "__init__.py", submodule_search_locations=[str(package)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[loaded]


@pytest.mark.parametrize(
    ("function", "x", "message"),
    [
        ("softmax", torch.ones(4, 8, dtype=torch.float64), "softmax: x must be float16, bfloat16 or float32"),
        ("softmax", torch.tensor(1.0), "softmax: x must have at least one dimension"),
        ("softmax", torch.ones(1, 65537), "softmax: rows of at most 65536 columns fit in one block, got 65537"),
        ("gelu", torch.ones(3, dtype=torch.int32), "gelu: x must be float16, bfloat16 or float32, got torch.int32"),
        # a view of one element: past int32's offsets, refused before anything is allocated
        ("gelu", torch.zeros(()).expand(2**31 - 2**20 + 1), "gelu: at most 2146435072 elements (int32 offsets)"),
    ],
)
def test_the_wrappers_refuse_what_they_cannot_compute(tunedkernels: ModuleType, function: str, x, message: str):
    with pytest.raises(ValueError, match=re.escape(message)):
        getattr(tunedkernels, function)(x)


@pytest.mark.parametrize("function", ["softmax", "gelu"])
@pytest.mark.parametrize("shape", [(0, 8), (4, 0)])
def test_an_empty_input_gives_an_empty_output_and_launches_nothing(tunedkernels: ModuleType, function: str, shape):
    # outside a tuning session: a launch would reach the autotuner, which times through a GPU
    y = getattr(tunedkernels, function)(torch.ones(shape, dtype=torch.float16))
    assert y.shape == shape and y.dtype == torch.float16


def test_the_longest_row_is_still_one_block(tunedkernels: ModuleType):
    # 65536 columns pass the check (and are computed); one more does not (above).
    x = torch.randn(1, 65536)
    with tuning.session(forced=0):
        assert torch.allclose(tunedkernels.softmax(x), torch.softmax(x, dim=-1), atol=1e-6)


@pytest.mark.parametrize(
    "view",
    [
        lambda base: base[:, :41],  # rows apart in memory: the softmax reads them in place
        lambda base: base[:, ::2],  # columns apart: copied first
        lambda base: base.t(),
        lambda base: base.reshape(3, 3, 64)[:, 1:, :41],
    ],
)
@pytest.mark.parametrize(
    ("function", "torch_function"),
    [("softmax", lambda x: torch.softmax(x, dim=-1)), ("gelu", lambda x: F.gelu(x, approximate="tanh"))],
)
def test_a_strided_input_is_read_as_its_values(tunedkernels: ModuleType, function: str, torch_function, view):
    x = view(torch.randn(9, 64))
    with tuning.session(forced=0):
        y = getattr(tunedkernels, function)(x)
    torch.testing.assert_close(y, torch_function(x), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize(
    ("function", "torch_function"),
    [("softmax", lambda x: torch.softmax(x, dim=-1)), ("gelu", lambda x: F.gelu(x, approximate="tanh"))],
)
def test_the_backward_is_torchs(tunedkernels: ModuleType, function: str, torch_function):
    x = torch.randn(9, 41, dtype=torch.float32, requires_grad=True)
    grad = torch.randn(9, 41)
    with tuning.session(forced=0):  # the autotuner times nothing on the CPU: its first config
        getattr(tunedkernels, function)(x).backward(grad)
    expected = x.detach().clone().requires_grad_()
    torch_function(expected).backward(grad)
    torch.testing.assert_close(x.grad, expected.grad, atol=1e-6, rtol=1e-5)
