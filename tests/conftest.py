import atexit
import gc
import os
import shutil
from pathlib import Path

import pytest

# One thread for torch's and numpy's math, here and in every process a test starts: the tests'
# tensors are tiny, and threads that spin waiting for each other on a busy 2-core machine (CI's,
# or pytest-xdist's workers side by side) made a 30 us matmul take 20 ms. Set before torch loads.
for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import torch  # noqa: E402

# Without a GPU, Triton kernels run in Triton's interpreter on CPU tensors. The variable is read
# when a kernel is decorated, so it must be set before kernels/ is imported.
HAS_GPU = torch.cuda.is_available()
if not HAS_GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")

ROOT = Path(__file__).resolve().parents[1]

# A pytest process that has run a few hundred tests holds millions of objects, and the collections
# at interpreter exit walk them all: pytest-xdist's workers took seconds each to end after their
# last test, the whole run waiting on them. Frozen first, the exit skips those collections (the
# process ends either way; what its atexit hooks clean up, they still clean up before this runs).
atexit.register(gc.freeze)


def pytest_xdist_auto_num_workers(config) -> int:
    # `-n auto`: one worker per core, but never fewer than four. Tests wait on the processes they
    # start (git, pip, perfbot's own), and on CI's two cores two more workers fill that time
    # (the inner loop's times with two and four: CONTRIBUTING.md, "Test tiers and their times").
    return max(4, len(os.sched_getaffinity(0)))


def pytest_collection_modifyitems(config, items):
    # Longest first, for pytest-xdist: a group (one worker runs it whole, --dist loadgroup) and
    # the slow tier start at once, so that no worker is left with a minute of them at the end.
    # Every worker collects the same order; the sort is stable, so modules keep theirs.
    items.sort(key=lambda item: (item.get_closest_marker("xdist_group") is None, "slow" not in item.keywords))
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def project(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A copy of this checkout's pyproject.toml, thresholds.yaml and kernels/, free to break,
    whose fused kernel is tests/stub_geglu.py: the same subject, computed in PyTorch, for the
    tests of the orchestration. A test that asks for "real" (ON_BOTH_SUBJECTS, or
    `@pytest.mark.parametrize("project", ["real"], indirect=True)`) gets the real kernel, run
    in Triton's interpreter; so does every GPU test, which measures it."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copy(ROOT / "thresholds.yaml", tmp_path / "thresholds.yaml")
    shutil.copytree(ROOT / "kernels", tmp_path / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
    if getattr(request, "param", "stub") != "real" and request.node.get_closest_marker("gpu") is None:
        shutil.copy(ROOT / "tests" / "stub_geglu.py", tmp_path / "kernels" / "geglu.py")
    return tmp_path


def quick_first(count: int, values: list) -> list:
    """A parametrization's values with all but the first `count` in the slow tier: the inner loop
    keeps a quick sibling of each family, CI runs every value."""
    return [
        value
        if index < count
        else pytest.param(*(value if isinstance(value, tuple) else (value,)), marks=pytest.mark.slow)
        for index, value in enumerate(values)
    ]


# An end-to-end test run twice: on the stand-in kernel, and on the real one (slow: the fused
# kernel in Triton's interpreter), so that what the stand-in shows is shown on the real thing too.
ON_BOTH_SUBJECTS = pytest.mark.parametrize(
    "project", ["stub", pytest.param("real", marks=pytest.mark.slow)], indirect=True
)


@pytest.fixture
def gpu(monkeypatch):
    """perfbot's GPU primitives replaced (tests/fake_gpu.py); `gpu.ms(name, call)` sets the timings."""
    from tests.fake_gpu import fake_gpu

    return fake_gpu(monkeypatch)
