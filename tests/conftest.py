import os
import shutil
from pathlib import Path

import pytest
import torch

# Without a GPU, Triton kernels run in Triton's interpreter on CPU tensors. The variable is read
# when a kernel is decorated, so it must be set before kernels/ is imported.
HAS_GPU = torch.cuda.is_available()
if not HAS_GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")

ROOT = Path(__file__).resolve().parents[1]


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of this checkout's pyproject.toml, thresholds.yaml and kernels/, free to break."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copy(ROOT / "thresholds.yaml", tmp_path / "thresholds.yaml")
    shutil.copytree(ROOT / "kernels", tmp_path / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


@pytest.fixture
def gpu(monkeypatch):
    """perfbot's GPU primitives replaced (tests/fake_gpu.py); `gpu.ms(name, call)` sets the timings."""
    from tests.fake_gpu import fake_gpu

    return fake_gpu(monkeypatch)
