"""The compiled-kernel records on the GPU: what perfbot reads from the cubin against what the CUDA
driver says of the loaded kernel (registers, local memory, occupancy), on both paths of this
repository's kernel, its three dtypes and its decode and prefill plans; and `perfbot run`
writing them into the results."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from kernels import geglu
from perfbot.cli import perfbot
from perfbot.compiling import artifacts, launches
from perfbot.jobs.bisect_probers import handed_back
from perfbot.records import results

pytestmark = pytest.mark.gpu

SHAPES = {
    "decode": (16, 3072, 24576),
    "prefill": (777, 2304, 9216),
    "small": (1024, 1024, 4096),
}


def _driver_occupancy(kernel) -> int:
    """cuOccupancyMaxActiveBlocksPerMultiprocessor for the loaded kernel."""
    cuda = ctypes.CDLL("libcuda.so.1")
    blocks = ctypes.c_int()
    status = cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor(
        ctypes.byref(blocks),
        ctypes.c_void_p(kernel.function),
        ctypes.c_int(kernel.metadata.num_warps * 32),
        ctypes.c_size_t(kernel.metadata.shared),
    )
    assert status == 0, f"cuOccupancyMaxActiveBlocksPerMultiprocessor: CUresult {status}"
    return blocks.value


@pytest.mark.parametrize("path", ["tma", "pointer"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("plan", list(SHAPES))
def test_recorded_resources_are_the_drivers(path: str, dtype: torch.dtype, plan: str):
    if path == "tma" and dtype == torch.float32:
        pytest.skip("the TMA path takes 16-bit inputs")
    M, K, N = SHAPES[plan]
    x = torch.randn(M, K, device="cuda", dtype=dtype)
    weight = torch.randn(2 * N, K, device="cuda", dtype=dtype) / K**0.5
    geglu.geglu(x, weight, path=path)  # compiled (and autotuned, where untuned) before it is seen
    with launches.recording() as seen:
        geglu.geglu(x, weight, path=path)
    torch.cuda.synchronize()
    compiled = artifacts.compiled(seen)
    assert compiled.unrecorded is None and len(compiled.kernels) == 1
    record = compiled.kernels[0]
    kernel, grid, count = seen.each()[0]
    assert record.name == f"_geglu_{path}_kernel" and count == 1 and record.grid == list(grid)
    assert record.registers == kernel.n_regs
    assert (record.spill_store_bytes > 0) == (kernel.n_spills > 0)  # the driver's local memory a thread
    assert record.dynamic_shared_bytes == kernel.metadata.shared
    assert record.occupancy is not None and record.occupancy.blocks_per_sm == _driver_occupancy(kernel)
    assert record.specialization["BLOCK_K"] == geglu.launch_plan(x, weight, path)["BLOCK_K"]
    assert record.instructions["tma"] > 0 if path == "tma" else record.instructions["tma"] == 0
    if dtype != torch.float32:
        assert record.instructions["mma"] > 0


TINY = """
tiny:
  about: one decode case
  dtype: bfloat16
  implementations: [fused, fused-pointer, eager]
  cases:
    - {name: m16, M: 16, K: 3072, N: 24576}
"""


def test_run_writes_the_compiled_kernels_of_each_benchmark(project: Path, tmp_path: Path):
    (project / "kernels" / "suites.yaml").write_text(TINY)
    out = tmp_path / "r.json"
    result = CliRunner().invoke(
        perfbot, ["run", "--project", str(project), "--suite", "tiny", "--samples", "10", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    by_kernel = {b.kernel: b.compiled for b in results.load(out).benchmarks}
    assert [k.name for k in by_kernel["fused"].kernels] == ["_geglu_tma_kernel"]
    assert [k.name for k in by_kernel["fused-pointer"].kernels] == ["_geglu_pointer_kernel"]
    assert by_kernel["eager"] is not None and by_kernel["eager"].kernels == []  # no Triton kernel
    assert all(k.sass is None for k in by_kernel["fused"].kernels)  # kept only on request


def test_sample_hands_its_compiled_kernels_back_to_a_bisect(project: Path, tmp_path: Path, monkeypatch):
    (project / "kernels" / "suites.yaml").write_text(TINY)
    handed = tmp_path / "compiled.json"
    monkeypatch.setenv("PERFBOT_BISECT_COMPILED", str(handed))
    result = CliRunner().invoke(
        perfbot, ["sample", "--project", str(project), "--suite", "tiny", "--case", "m16", "--samples", "10"]
    )
    assert result.exit_code == 0, result.output
    record = handed_back(handed).compiled
    assert record is not None and [k.name for k in record.kernels] == ["_geglu_tma_kernel"]


PTXAS_AFTER_COMPILE = """
import os, sys, torch
if sys.argv[1] == "pinned":
    from perfbot.compiling import toolchain
    toolchain.pin_toolchain()
compiled = torch.compile(lambda t: t * 2 + 1)
compiled(torch.randn(64, device="cuda"))
print(os.environ.get("TRITON_PTXAS_PATH"), os.environ.get("TRITON_CACHE_DIR"))
"""


@pytest.mark.parametrize("pinned", [False, True])
def test_torch_compile_leaves_a_pinned_ptxas_and_cache_alone(pinned: bool, tmp_path: Path):
    import os
    import subprocess
    import sys

    import triton

    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_PTXAS_PATH", "TRITON_CACHE_DIR")}
    env["TRITON_HOME"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", PTXAS_AFTER_COMPILE, "pinned" if pinned else "plain"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    ptxas, cache = done.stdout.strip().splitlines()[-1].split(" ")
    bundled = str(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas")
    own_cache = str(tmp_path / ".triton" / "cache")
    if pinned:
        assert (ptxas, cache) == (bundled, own_cache)
    else:  # the hazard itself: torch.compile names the ptxas PyTorch ships, and a cache of its own
        assert ptxas != bundled and Path(ptxas).name == "ptxas" and cache != own_cache, (ptxas, cache)


def test_explain_on_the_gpu_runs_each_implementation_here(project: Path, tmp_path: Path):
    """`perfbot explain`'s GPU path: each implementation called on this GPU, its kernels recorded
    as a run records them, both sides the same machine code in an A/A."""
    import json
    import os
    import subprocess
    import sys

    git = ["git", "-c", "user.name=perfbot", "-c", "user.email=perfbot@localhost"]
    for step in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "main"]):
        subprocess.run([*git, *step], cwd=project, check=True)
    out = tmp_path / "explain.json"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "perfbot",
            "explain",
            "HEAD",
            "--suite",
            "decode",
            "--case",
            "gemma-7b-m16",
            "--out",
            str(out),
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "run once on this machine's NVIDIA" in done.stdout  # the GPU here, not a named one without it
    rows = {row["implementation"]: row for row in json.loads(out.read_text())["rows"]}
    for name, kernel in (("fused", "_geglu_tma_kernel"), ("fused-pointer", "_geglu_pointer_kernel")):
        row = rows[name]
        assert row["change"]["same_machine_code"], row["change"]
        assert [k["name"] for k in row["base"]["compiled"]["kernels"]] == [kernel]
