"""geglu's gradients (kernels/geglu_backward.py and the factors the forward saves) against float64
autograd of the reference, in Triton's interpreter (fp16 and fp32: its bf16 dot is wrong); the
no-grad forward left as it was; the kernels compiled for sm_90 without a GPU (slow); CUDA-graph
replays on the GPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from kernels import geglu as geglu_module
from kernels import geglu_backward
from kernels.geglu import _gelu, _gelu_and_grad, geglu
from kernels.subject import geglu_float64, subject

ROOT = Path(__file__).resolve().parents[1]
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
needs_interpreter = pytest.mark.skipif(not INTERPRETED, reason="interpreter tests run where there is no GPU")

# The subject's tolerances: the relative Frobenius error every implementation must meet.
TOLERANCE = {torch.float16: subject.tolerance["float16"], torch.float32: subject.tolerance["float32"]}

# (batch dims, K, N): odd row counts, below and above a block, one row, a 3-D x. K = 72 and
# N = 40 are multiples of 8 (the TMA path's) but not of any block.
SHAPES = [((37,), 72, 40), ((1,), 72, 40), ((2, 3, 7), 72, 40), ((130,), 72, 40)]
# Small tiles, so that the dx kernel walks several row blocks, column blocks and steps of N.
SMALL = {"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 32}


def relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    return ((got.double() - want).norm() / want.norm()).item()


def close(got: torch.Tensor, want: torch.Tensor, dtype: torch.dtype) -> bool:
    return relative_error(got, want) <= TOLERANCE[dtype]


def make_inputs(batch, K, N, dtype, seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(*batch, K, generator=generator).to(dtype).to(DEVICE)
    weight = (torch.randn(2 * N, K, generator=generator) / K**0.5).to(dtype).to(DEVICE)
    # grad_out not contiguous: every other column of a wider tensor.
    g = torch.randn(*batch, 2 * N, generator=generator).to(dtype).to(DEVICE)[..., ::2]
    return x, weight, g


def float64_grads(x, weight, g, approximate):
    x64, w64 = x.double().requires_grad_(), weight.double().requires_grad_()
    out = geglu_float64(x64, w64, approximate)
    return (out.detach(), *torch.autograd.grad(out, (x64, w64), g.double()))


def grads(x, weight, g, approximate="none", **options):
    xg, wg = x.clone().requires_grad_(), weight.clone().requires_grad_()
    out = geglu(xg, wg, approximate=approximate, **options)
    return (out.detach(), *torch.autograd.grad(out, (xg, wg), g))


@pytest.fixture
def plan(monkeypatch):
    """Force the backward's plan (and small tiles): plan("fused") or plan("split")."""
    real = geglu_backward.plan_for

    def force(name, config=None):
        monkeypatch.setattr(
            geglu_backward, "plan_for", lambda M, K, dtype, num_sms: real(M, K, dtype, num_sms, name, config)
        )

    return force


def _assert_matches(got, want, dtype):
    for name, a, b in zip(("out", "dx", "dW"), got, want, strict=True):
        assert a.shape == b.shape, name
        error = relative_error(a, b)
        # Well inside the tolerance, and the tolerance tight enough to catch a gradient 1% off.
        assert error <= TOLERANCE[dtype] / 2, (name, error)
        assert not close(a * 1.01, b, dtype), name


def _every_combination():
    """Each shape, dtype, GELU and save or recompute: the slow tier takes them all; the inner loop
    four, each shape once, which between them take each dtype, GELU and way of saving twice."""
    quick = {
        ((37,), "fp16", "none", "save"),
        ((1,), "fp32", "tanh", "recompute"),
        ((2, 3, 7), "fp16", "tanh", "recompute"),
        ((130,), "fp32", "none", "save"),
    }
    for batch, K, N in SHAPES:
        for dtype, dtype_id in ((torch.float16, "fp16"), (torch.float32, "fp32")):
            for approximate in ("none", "tanh"):
                for recompute, how in ((False, "save"), (True, "recompute")):
                    marks = () if (batch, dtype_id, approximate, how) in quick else (pytest.mark.slow,)
                    name = f"{'x'.join(map(str, batch))}-{dtype_id}-{approximate}-{how}"
                    yield pytest.param(batch, K, N, dtype, approximate, recompute, id=name, marks=marks)


@needs_interpreter
@pytest.mark.parametrize("batch,K,N,dtype,approximate,recompute", list(_every_combination()))
def test_gradients_match_float64_autograd(plan, batch, K, N, dtype, approximate, recompute):
    plan("fused", SMALL)
    x, weight, g = make_inputs(batch, K, N, dtype, seed=len(batch) + batch[0])
    _assert_matches(
        grads(x, weight, g, approximate, recompute=recompute), float64_grads(x, weight, g, approximate), dtype
    )


@needs_interpreter
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=["fp16", "fp32"])
def test_the_split_plan_of_few_rows_matches_float64_autograd(dtype, approximate):
    x, weight, g = make_inputs((2, 9), 72, 40, dtype)
    assert geglu_backward.plan_for(18, 72, dtype, 4).plan == "split"  # one tile of dx: the default plan
    _assert_matches(grads(x, weight, g, approximate), float64_grads(x, weight, g, approximate), dtype)


TMA_CONFIGS = [
    {"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 16, "one_dot": True, "flatten": True},
    {"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 32, "epilogue_subtile": True},
]


@needs_interpreter
@pytest.mark.parametrize("recompute", [False, True], ids=["save", "recompute"])
@pytest.mark.parametrize("config", TMA_CONFIGS, ids=["one-dot", "subtiled"])
def test_the_tma_forward_saves_h_right(plan, config, recompute):
    plan("fused", SMALL)
    x, weight, g = make_inputs((70,), 72, 40, torch.float16)  # N = 40: an edge tile in each half
    got = grads(x, weight, g, "tanh", path="tma", config=config, recompute=recompute)
    _assert_matches(got, float64_grads(x, weight, g, "tanh"), torch.float16)


@needs_interpreter
@pytest.mark.parametrize("recompute", [False, True], ids=["save", "recompute"])
def test_the_epilogue_forward_saves_h_right(monkeypatch, plan, recompute):
    """The epilogue path stores the backward's factors from cuBLAS's z (in x's dtype, where the
    fused kernels take them from their fp32 accumulators); recomputed, it runs the path again
    (twice in all)."""
    plan("fused", SMALL)
    launched, real = [], geglu_module._launch_epilogue
    monkeypatch.setattr(geglu_module, "_launch_epilogue", lambda *args: launched.append(1) or real(*args))
    x, weight, g = make_inputs((70,), 41, 150, torch.float16)  # edge tiles both ways; K no TMA takes
    got = grads(x, weight, g, "tanh", path="epilogue", recompute=recompute)
    _assert_matches(got, float64_grads(x, weight, g, "tanh"), torch.float16)
    assert len(launched) == (2 if recompute else 1)


@needs_interpreter
def test_the_split_k_forward_saves_h_right(monkeypatch):
    monkeypatch.setattr(geglu_module, "_device_info", lambda device: ("NVIDIA H200", 132, True))
    x, weight, g = make_inputs((5,), 2104, 24, torch.float16)
    assert geglu_module.launch_plan(x, weight)["split_k"] > 1
    _assert_matches(grads(x, weight, g), float64_grads(x, weight, g, "none"), torch.float16)


@triton.jit
def _gelu_and_grad_of(z_ptr, gelu_ptr, grad_ptr, plain_ptr, count, APPROXIMATE_TANH: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    z = tl.load(z_ptr + offs, mask=offs < count)
    gelu, grad = _gelu_and_grad(z, APPROXIMATE_TANH)
    tl.store(gelu_ptr + offs, gelu, mask=offs < count)
    tl.store(grad_ptr + offs, grad, mask=offs < count)
    tl.store(plain_ptr + offs, _gelu(z, APPROXIMATE_TANH), mask=offs < count)


@needs_interpreter
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_derivative_matches_float64_autograd(approximate):
    """The only new math of the backward, checked as gradcheck would (float64 autograd of F.gelu);
    geglu takes no float64, so gradcheck itself cannot run on it. The gelu it returns is _gelu's,
    bit for bit: one polynomial, kept in two places."""
    z = torch.linspace(-12, 12, 96_001, dtype=torch.float32)
    gelu, grad, plain = (torch.empty_like(z) for _ in range(3))
    _gelu_and_grad_of[(triton.cdiv(z.numel(), 8192),)](
        z, gelu, grad, plain, z.numel(), APPROXIMATE_TANH=approximate == "tanh", BLOCK=8192
    )
    z64 = z.double().requires_grad_()
    (want,) = torch.autograd.grad(F.gelu(z64, approximate=approximate).sum(), z64)
    assert (grad.double() - want).abs().max().item() < 3e-6
    assert torch.equal(gelu, plain)
    assert (grad.double() - want).abs().max().item() > 0  # not a copy of the reference
    wrong = "tanh" if approximate == "none" else "none"
    (other,) = torch.autograd.grad(F.gelu(z64, approximate=wrong).sum(), z64)
    assert (grad.double() - other).abs().max().item() > 1e-4  # the two GELUs' slopes are told apart


@needs_interpreter
def test_float64_is_refused_so_gradcheck_cannot_run():
    x, weight, _ = make_inputs((3,), 8, 8, torch.float64)
    with pytest.raises(ValueError, match="float16, bfloat16, float32"):
        geglu(x.requires_grad_(), weight)


@needs_interpreter
@pytest.mark.parametrize("recompute", [False, True], ids=["save", "recompute"])
def test_the_backward_twice_with_retain_graph_gives_equal_results(plan, recompute):
    plan("fused", SMALL)
    x, weight, g = make_inputs((37,), 72, 40, torch.float16)
    xg, wg = x.clone().requires_grad_(), weight.clone().requires_grad_()
    out = geglu(xg, wg, recompute=recompute)
    first = torch.autograd.grad(out, (xg, wg), g, retain_graph=True)
    second = torch.autograd.grad(out, (xg, wg), g, retain_graph=True)
    assert all(torch.equal(a, b) for a, b in zip(first, second, strict=True))
    assert xg.grad is None and wg.grad is None  # nothing accumulated


@needs_interpreter
def test_gradients_of_one_input_only(plan):
    plan("fused", SMALL)
    x, weight, g = make_inputs((37,), 72, 40, torch.float32)
    _, dx_want, dw_want = float64_grads(x, weight, g, "none")
    xg = x.clone().requires_grad_()
    (dx,) = torch.autograd.grad(geglu(xg, weight), xg, g)
    assert close(dx, dx_want, torch.float32)
    wg = weight.clone().requires_grad_()
    (dw,) = torch.autograd.grad(geglu(x, wg), wg, g)
    assert close(dw, dw_want, torch.float32)


@needs_interpreter
def test_the_module_constant_chooses_save_or_recompute(monkeypatch):
    x, weight, _ = make_inputs((9,), 16, 8, torch.float16)
    saved = {}
    for recompute in (False, True):
        monkeypatch.setattr(geglu_module, "RECOMPUTE", recompute)
        out = geglu(x.clone().requires_grad_(), weight)
        saved[recompute] = [t is None for t in out.grad_fn.saved_tensors]
    assert saved == {False: [False, False, False], True: [False, False, True]}  # x, weight, h


@needs_interpreter
def test_without_grad_the_forward_launches_what_it_did(monkeypatch):
    """No input requiring grad, or grad disabled: the plan geglu always launched, without h (the
    kernels then compile to the same SASS as before the backward: test_the_no_grad_forward_...)."""
    launched = []
    real = geglu_module._launch
    monkeypatch.setattr(geglu_module, "_launch", lambda *args: launched.append(args) or real(*args))
    x, weight, _ = make_inputs((37,), 72, 40, torch.float16)
    plain = geglu(x, weight)
    with torch.no_grad():
        within = geglu(x.clone().requires_grad_(), weight.clone().requires_grad_())
    assert torch.equal(plain, within) and within.grad_fn is None and not within.requires_grad
    assert [args[5] for args in launched] == [None, None]  # x2d, weight, out, plan, tanh, and no h
    assert launched[0][3] == geglu_module.plan_for(x, weight)
    trained = geglu(x.clone().requires_grad_(), weight)
    assert launched[2][3] == launched[0][3] and launched[2][5].shape == (37, 80)  # the same plan, with h
    assert torch.equal(trained.detach(), plain)  # and the same out


@needs_interpreter
def test_out_is_refused_where_autograd_needs_the_result():
    x, weight, _ = make_inputs((3,), 16, 8, torch.float16)
    with pytest.raises(ValueError, match="out= is for calls without autograd"):
        geglu(x.requires_grad_(), weight, out=torch.empty(3, 8, dtype=torch.float16))


@needs_interpreter
def test_empty_dimensions_have_zero_gradients():
    for batch, K, N in (((0,), 16, 8), ((3,), 0, 8), ((3,), 16, 0)):
        x, weight, _ = make_inputs(batch, K, N, torch.float32)
        xg, wg = x.requires_grad_(), weight.requires_grad_()
        out = geglu(xg, wg)
        dx, dw = torch.autograd.grad(out, (xg, wg), torch.ones_like(out), allow_unused=True)
        assert dx.shape == x.shape and dw.shape == weight.shape
        assert not dx.any() and not dw.any()


@needs_interpreter
def test_the_backward_plan_refuses_what_it_does_not_know():
    with pytest.raises(ValueError, match="plan must be one of"):
        geglu_backward.plan_for(100, 64, torch.float16, 132, "fast")
    with pytest.raises(ValueError, match="unknown launch option"):
        geglu_backward.plan_for(100, 64, torch.float16, 132, None, {"BLOCK_Q": 4})


def test_the_split_plan_is_the_default_and_fused_is_taken_where_dx_has_a_tile_per_sm(monkeypatch):

    def plan(M, K, dtype=torch.bfloat16, asked=None):
        return geglu_backward.plan_for(M, K, dtype, 132, asked).plan  # the H200's SMs

    assert plan(8192, 2048) == "split"
    # 128 x 128 tiles of dx: d2048 of the A100 sweep has 256, d1024 64; decode one row of them.
    fused = [plan(M, K, asked="fused") for M, K in ((8192, 2048), (2048, 2048), (1024, 1024), (64, 3072))]
    assert fused == ["fused", "fused", "split", "split"]
    assert (plan(1056, 2048, asked="fused"), plan(1024, 2048, asked="fused")) == ("fused", "split")  # 144, 128 tiles
    assert plan(528, 1024, torch.float32, "fused") == "fused"  # fp32's 64 x 64 tiles: 9 x 16
    monkeypatch.setattr(geglu_backward, "FORCE_PLAN", "fused")
    assert plan(8192, 2048) == "fused"


@needs_interpreter
def test_torch_compile_runs_the_function_and_its_backward():
    x, weight, g = make_inputs((9,), 16, 8, torch.float32)
    compiled = torch.compile(lambda x, w: geglu(x, w, approximate="tanh") * 2, backend="eager")
    xg, wg = x.clone().requires_grad_(), weight.clone().requires_grad_()
    got = torch.autograd.grad(compiled(xg, wg), (xg, wg), g)
    _, dx, dw = float64_grads(x, weight, 2 * g, "tanh")
    assert close(got[0], dx, torch.float32) and close(got[1], dw, torch.float32)


@pytest.mark.gpu
@pytest.mark.parametrize("recompute", [False, True], ids=["save", "recompute"])
@pytest.mark.parametrize("M,K,plan", [(16, 256, None), (1000, 256, None), (2048, 1152, "fused")])
def test_a_cuda_graph_of_the_backward_replays_right_and_does_not_accumulate(monkeypatch, M, K, plan, recompute):
    """As perfbot captures it: the forward outside the graph, torch.autograd.grad inside. 2048 x
    1152 has 144 tiles of dx, enough for the fused plan on a GPU of up to 144 SMs."""
    monkeypatch.setattr(geglu_backward, "FORCE_PLAN", plan)
    x, weight, g = make_inputs((M,), K, 384, torch.bfloat16)
    xg, wg = x.clone().requires_grad_(), weight.clone().requires_grad_()
    # The forward runs on the capture's stream: the backward runs on its forward's stream, and one
    # on the default (legacy) stream cannot be joined during a capture (cudaErrorStreamCaptureImplicit).
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        out = geglu(xg, wg, recompute=recompute)
        eager = torch.autograd.grad(out, (xg, wg), g, retain_graph=True)
        torch.autograd.grad(out, (xg, wg), g, retain_graph=True)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            captured = torch.autograd.grad(out, (xg, wg), g, retain_graph=True)
    torch.cuda.synchronize()
    for _ in range(3):
        graph.replay()
        torch.cuda.synchronize()
        assert all(torch.equal(a, b) for a, b in zip(captured, eager, strict=True))
    bf16 = subject.tolerance["bfloat16"]
    for got, want in zip(captured, float64_grads(x, weight, g, "none")[1:], strict=True):
        assert relative_error(got, want) <= bf16


# Compiled for the H200 with perfbot's compile-only driver, in a process of its own without the
# interpreter (tests/test_compiling.py does the same for other kernels).
COMPILE = """
import sys, torch
from perfbot.compiling import artifacts, launches, offline
with offline.compiling_for(offline.gpu_named("NVIDIA H200")):
    from kernels import geglu_backward
    from kernels.geglu import geglu
    geglu_backward.FORCE_PLAN = "fused"  # where dx has a tile per SM; else the split plan
    # 144 tiles of dx for 132 SMs (the fused plan), a decode shape (the split plan), fp32's fused plan
    for M, K, N, dtype in ((1056, 2048, 512, torch.bfloat16), (16, 3072, 1024, torch.float16),
                           (576, 1024, 256, torch.float32)):
        x = torch.zeros(M, K, dtype=dtype, requires_grad=True)
        w = torch.zeros(2 * N, K, dtype=dtype, requires_grad=True)
        with launches.recording() as seen:
            out = geglu(x, w)
            torch.autograd.grad(out, (x, w), torch.zeros_like(out))
        for k in artifacts.compiled(seen).kernels:
            print(M, k.name, k.spill_store_bytes, k.instructions.get("mma", 0), k.occupancy.blocks_per_sm)
"""


# The commit before the backward: the no-grad forward must compile as it did there, on every plan
# of the H200 (experiments/2026-12-07-geglu-backward/compile_sm90.py shows all 14 kernels).
BASE = "65307e1"
SAME_SASS = """
import importlib, io, subprocess, sys, tarfile, tempfile, torch
from pathlib import Path
from perfbot.compiling import artifacts, launches, offline
where = Path(tempfile.mkdtemp())
archive = subprocess.run(["git", "archive", sys.argv[1], "kernels"], capture_output=True, check=True).stdout
tarfile.open(fileobj=io.BytesIO(archive)).extractall(where, filter="data")
(where / "kernels").rename(where / "kernels_base")
sys.path.insert(0, str(where))
with offline.compiling_for(offline.gpu_named("NVIDIA H200")):
    base = importlib.import_module("kernels_base.geglu")
    from kernels import geglu
    for M, K, N, dtype, approximate in ((256, 2048, 512, torch.bfloat16, "tanh"),
                                        (16, 3072, 1024, torch.bfloat16, "none"),
                                        (256, 512, 256, torch.float32, "tanh")):
        x = torch.zeros(M, K, dtype=dtype, requires_grad=True)
        w = torch.zeros(2 * N, K, dtype=dtype, requires_grad=True)
        for module in (base, geglu):
            with torch.no_grad(), launches.recording() as seen:
                module.geglu(x, w, approximate=approximate)
            for k in artifacts.compiled(seen).kernels:
                print(M, k.name, k.sass_sha256, k.grid)
"""


@pytest.fixture(scope="module")
def compiled_for_sm_90() -> dict[str, list[str]]:
    """COMPILE's lines and, where BASE is in this clone, SAME_SASS's: one process without the
    interpreter compiles both (one start of PyTorch, Triton and the compile-only driver)."""
    has_base = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{BASE}^{{commit}}"], check=False)
    scripts = [COMPILE, 'print("---")', SAME_SASS] if has_base.returncode == 0 else [COMPILE]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    # Without line info, as `perfbot explain` compiles (measuring/compiled_sides.py): the SASS is the
    # same either way, and a forward that compiles as it did is then the same cubin, read once.
    env["TRITON_DISABLE_LINE_INFO"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(scripts), BASE],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    compiled, _, same = done.stdout.partition("---\n")
    lines = {"backward": compiled.splitlines()}
    if has_base.returncode == 0:
        lines["same-sass"] = same.splitlines()
    return lines


@pytest.mark.slow
@pytest.mark.xdist_group("geglu-sm90")
def test_the_backward_kernels_compile_for_sm_90_without_a_gpu(compiled_for_sm_90: dict[str, list[str]]):
    rows = [line.split() for line in compiled_for_sm_90["backward"]]
    kernels = {(int(m), name): (int(spills), int(mma), int(blocks)) for m, name, spills, mma, blocks in rows}
    assert set(kernels) == {
        (1056, "_geglu_tma_kernel"),  # the forward, saving h
        (1056, "_geglu_dx_kernel"),
        (16, "_geglu_split_k_kernel"),
        (16, "_geglu_dz_kernel"),
        (576, "_geglu_pointer_kernel"),  # fp32
        (576, "_geglu_dx_kernel"),
    }
    assert kernels[(1056, "_geglu_dx_kernel")][0] == 0  # no spills in the 16-bit dx kernel
    assert kernels[(1056, "_geglu_dx_kernel")][1] > 0  # on the tensor cores
    assert all(blocks >= 1 for _, _, blocks in kernels.values())  # each fits an SM


@pytest.mark.slow
@pytest.mark.xdist_group("geglu-sm90")
def test_the_no_grad_forward_compiles_to_the_same_sass_as_before_the_backward(compiled_for_sm_90: dict[str, list[str]]):
    if "same-sass" not in compiled_for_sm_90:
        pytest.skip(f"{BASE} is not in this clone (a shallow checkout)")
    lines = compiled_for_sm_90["same-sass"]
    assert len(lines) == 6
    names = [line.split()[1] for line in lines]
    assert names == ["_geglu_tma_kernel"] * 2 + ["_geglu_split_k_kernel"] * 2 + ["_geglu_pointer_kernel"] * 2
    for before, after in zip(lines[::2], lines[1::2], strict=True):
        assert before == after  # the same SASS digest and grid


def test_the_compiled_baselines_allow_retain_graph():
    import importlib

    importlib.import_module("kernels.subject")._compile()
    assert importlib.import_module("torch._functorch.config").donated_buffer is False


@pytest.mark.gpu
def test_the_compiled_baseline_backward_replays_with_retain_graph():
    """As perfbot times a backward: torch.autograd.grad(..., retain_graph=True), more than once.
    With donated buffers (torch's default) the first such call raised on an H100; on the CPU
    Inductor donated none here, so this runs on the GPU."""
    from kernels.subject import compiled

    x, weight, g = make_inputs((1000,), 256, 384, torch.float32)
    xg, wg = x.clone().requires_grad_(), weight.clone().requires_grad_()
    out = compiled(xg, wg, approximate="tanh")
    first = torch.autograd.grad(out, (xg, wg), g, retain_graph=True)
    second = torch.autograd.grad(out, (xg, wg), g, retain_graph=True)
    assert all(torch.equal(a, b) for a, b in zip(first, second, strict=True))
    _, dx, dw = float64_grads(x, weight, g, "tanh")
    assert close(first[0], dx, torch.float32) and close(first[1], dw, torch.float32)


@needs_interpreter
def test_a_second_derivative_is_refused():
    x, weight, g = make_inputs((5,), 16, 8, torch.float32)
    xg = x.clone().requires_grad_()
    (dx,) = torch.autograd.grad(geglu(xg, weight), xg, g, create_graph=True)
    with pytest.raises(RuntimeError, match="does not require grad"):
        torch.autograd.grad(dx.sum(), xg)


def test_the_files_recorded_for_the_fused_implementations_include_the_backward():
    """perfbot records (and compares across an A/B) the files an implementation's code reaches
    through its globals, not what it imports when it runs: geglu.py imports the backward's module
    at the top for that."""
    from kernels.subject import fused, fused_pointer
    from perfbot.loading import provenance

    sources = provenance.of(ROOT, {"fused": fused, "fused-pointer": fused_pointer}, project={"kernels"})
    for name in ("fused", "fused-pointer"):
        assert "kernels/geglu_backward.py" in sources.recorded()[name]
