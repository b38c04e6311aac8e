"""The GeGLU backward on one GPU: fused (h saved, h recomputed) against eager autograd,
torch.compile autograd and the bound (cuBLAS's dx and dW alone), with CUDA graphs, L2 flushed
before each sample and the ways interleaved in random order each round; gradients checked
against float64 first; peak memory of each way. Writes OUT/results.json and OUT/results.md.

    python3 experiments/2026-12-07-geglu-backward/bench.py OUT [--quick] [--rounds N]
    TRITON_INTERPRET=1 python3 experiments/2026-12-07-geglu-backward/bench.py OUT --dry   # CPU

Standalone: loads kernels/geglu.py without perfbot (kernels/__init__.py imports perfbot).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import random
import statistics
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

import torch
import torch._functorch.config
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[2]
sys.modules.setdefault("kernels", types.ModuleType("kernels"))
sys.modules["kernels"].__path__ = [str(ROOT / "kernels")]  # type: ignore[attr-defined]
geglu_module = importlib.import_module("kernels.geglu")
backward_module = importlib.import_module("kernels.geglu_backward")
geglu = geglu_module.geglu

# kernels/subject.py's tolerances (relative Frobenius error), which eager must pass too.
TOLERANCE = {torch.bfloat16: 1e-2, torch.float16: 2e-3, torch.float32: 1e-5}
DTYPE_NAMES = {torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float32: "float32"}

# (group, M, K, N, dtype)
SHAPES = [
    *[("a100", d, d, 4 * d, torch.float16) for d in (512, 1024, 2048, 4096)],
    ("model", 8192, 2048, 5120, torch.bfloat16),  # T5-XL
    ("model", 8192, 4096, 11008, torch.bfloat16),  # LLaMA-7B
    ("model", 8192, 3072, 24576, torch.bfloat16),  # Gemma-7B
    ("model", 8192, 5376, 21504, torch.bfloat16),  # Gemma-3-27B
    *[("decode", m, 3072, 24576, torch.bfloat16) for m in (1, 16, 64)],
]
QUICK = [
    ("a100", 1024, 1024, 4096, torch.float16),
    ("model", 8192, 3072, 24576, torch.bfloat16),
    ("decode", 16, 3072, 24576, torch.bfloat16),
]
DRY = [("dry", 130, 72, 40, torch.float16), ("dry", 5, 64, 24, torch.float32)]

# Backward alone: the forward runs outside the graph, the graph is the backward.
BACKWARD_WAYS = ("bound", "fused-save", "fused-recompute", "save-split", "save-fused", "eager", "compiled")
# Forward and backward in one graph.
BOTH_WAYS = ("fused-save+fwd", "fused-recompute+fwd", "eager+fwd")


def eager_geglu(x: torch.Tensor, weight: torch.Tensor, approximate: str) -> torch.Tensor:
    z1, z2 = F.linear(x, weight).chunk(2, dim=-1)
    return z1 * F.gelu(z2, approximate=approximate)


_compiled = None


def compiled_geglu(x: torch.Tensor, weight: torch.Tensor, approximate: str) -> torch.Tensor:
    global _compiled
    if _compiled is None:
        torch._dynamo.config.recompile_limit = 1024
        torch._dynamo.config.accumulated_recompile_limit = 4096
        torch._dynamo.config.fail_on_recompile_limit_hit = True
        # A compiled backward with donated buffers refuses retain_graph=True, which the graphs
        # of the backward alone replay with.
        torch._functorch.config.donated_buffer = False
        _compiled = torch.compile(eager_geglu)
    return _compiled(x, weight, approximate)


def fused(recompute: bool) -> Callable[..., torch.Tensor]:
    return lambda x, w, approximate: geglu(x, w, approximate=approximate, recompute=recompute)


FORWARDS: dict[str, Callable[..., torch.Tensor]] = {
    "fused-save": fused(False),
    "fused-recompute": fused(True),
    "save-split": fused(False),
    "save-fused": fused(False),
    "eager": eager_geglu,
    "compiled": compiled_geglu,
}


# Diagnostic ways: h saved, the backward's plan forced (geglu_backward.FORCE_PLAN).
FORCED = {"save-split": "split", "save-fused": "fused"}


class Plan:
    """Within the block, the backward takes the way's forced plan, if it has one."""

    def __init__(self, way: str) -> None:
        self.plan = FORCED.get(way)

    def __enter__(self) -> None:
        backward_module.FORCE_PLAN = self.plan

    def __exit__(self, *exc: object) -> None:
        backward_module.FORCE_PLAN = None


def inputs(M: int, K: int, N: int, dtype: torch.dtype, device: str, seed: int) -> tuple[torch.Tensor, ...]:
    """x, weight (z = x @ weight.T of order 1), g = grad_out, and g2 [M, 2N] for the bound."""
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(M, K, generator=gen, device=device).to(dtype)
    w = (torch.randn(2 * N, K, generator=gen, device=device) / K**0.5).to(dtype)
    g = torch.randn(M, N, generator=gen, device=device).to(dtype)
    g2 = torch.randn(M, 2 * N, generator=gen, device=device).to(dtype)
    return x, w, g, g2


def relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    return ((got.double() - want).norm() / want.norm()).item()


def check(way: str, x: torch.Tensor, w: torch.Tensor, g: torch.Tensor, approximate: str, ref: tuple) -> dict:
    """The way's out, dx and dW against float64 autograd of the same formula."""
    xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
    with Plan(way):
        out = FORWARDS[way](xg, wg, approximate)
        dx, dw = torch.autograd.grad(out, (xg, wg), g)
    errors = {
        "out": relative_error(out.detach(), ref[0]),
        "dx": relative_error(dx, ref[1]),
        "dW": relative_error(dw, ref[2]),
    }
    return {"errors": errors, "ok": max(errors.values()) <= TOLERANCE[x.dtype]}


def reference(x: torch.Tensor, w: torch.Tensor, g: torch.Tensor, approximate: str) -> tuple:
    x64, w64 = x.double().requires_grad_(), w.double().requires_grad_()
    out = eager_geglu(x64, w64, approximate)
    dx, dw = torch.autograd.grad(out, (x64, w64), g.double())
    return out.detach(), dx, dw


def bench_case(group: str, M: int, K: int, N: int, dtype: torch.dtype, approximate: str, rounds: int, dry: bool) -> dict:
    device = "cpu" if dry else "cuda"
    x, w, g, g2 = inputs(M, K, N, dtype, device, seed=M * 31 + K * 7 + N)
    ref = reference(x, w, g, approximate)
    case: dict = {
        "group": group,
        "shape": {"M": M, "K": K, "N": N},
        "dtype": DTYPE_NAMES[dtype],
        "approximate": approximate,
        "forward_plan": geglu_module.launch_plan(x, w),
        "backward_plan": backward_module.plan_for(M, K, dtype, geglu_module._device_info(x.device)[1]).record(),
        "ways": {},
    }
    for way in FORWARDS:
        case["ways"][way] = check(way, x, w, g, approximate, ref)
    bound = (g2.double() @ w.double(), g2.double().T @ x.double())
    got = (g2 @ w, g2.T @ x)
    bound_errors = [relative_error(a, b) for a, b in zip(got, bound, strict=True)]
    case["ways"]["bound"] = {"errors": {"dx": bound_errors[0], "dW": bound_errors[1]}, "ok": True}
    del ref, bound, got
    if dry:
        return case
    for way in FORWARDS:
        if way not in FORCED:
            case["ways"][way]["memory"] = memory(way, x, w, g, approximate)
    graphs = capture_all(x, w, g, g2, approximate)
    samples = time_interleaved(graphs, rounds)
    for name, values in samples.items():
        case["ways"].setdefault(name, {})["samples_ms"] = values
        case["ways"][name]["median_ms"] = statistics.median(values)
    del graphs
    torch.cuda.empty_cache()
    return case


def memory(way: str, x: torch.Tensor, w: torch.Tensor, g: torch.Tensor, approximate: str) -> dict:
    """Bytes beyond the inputs: held from the forward to the backward (saved tensors, out
    included), and the peak over forward and backward."""
    xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out = FORWARDS[way](xg, wg, approximate)
    torch.cuda.synchronize()
    held = torch.cuda.memory_allocated() - base
    grads = torch.autograd.grad(out, (xg, wg), g)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del out, grads
    return {"held_after_forward_bytes": held, "peak_bytes": peak}


def capture(fn: Callable[[], object], stream: torch.cuda.Stream) -> torch.cuda.CUDAGraph:
    """fn's launches in a graph captured on `stream`, after two calls there."""
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            fn()
    torch.cuda.synchronize()
    return graph


def capture_all(x: torch.Tensor, w: torch.Tensor, g: torch.Tensor, g2: torch.Tensor, approximate: str) -> dict:
    # One side stream for the forwards and the captures: the backward runs on its forward's
    # stream, and a forward on the default (legacy) stream cannot be waited on during a capture.
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graphs: dict[str, torch.cuda.CUDAGraph] = {"bound": capture(lambda: (g2 @ w, g2.T @ x), stream)}
    xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
    for way in FORWARDS:
        with Plan(way), torch.cuda.stream(stream):
            out = FORWARDS[way](xg, wg, approximate)  # outside the graph, kept for its replays
            graphs[way] = capture(lambda out=out: torch.autograd.grad(out, (xg, wg), g, retain_graph=True), stream)
            graphs[way].keep = out  # type: ignore[attr-defined]
    for way in BOTH_WAYS:
        forward = FORWARDS[way.removesuffix("+fwd")]
        graphs[way] = capture(lambda f=forward: torch.autograd.grad(f(xg, wg, approximate), (xg, wg), g), stream)
    return graphs


class L2Flush:
    """Reads a buffer of 4x L2 (at least 256 MiB) before each sample, as perfbot/measuring/measure.py."""

    def __init__(self) -> None:
        l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)
        self.buffer = torch.empty(max(256 << 20, 4 * l2) // 8, dtype=torch.int64, device="cuda")

    def __call__(self) -> None:
        torch.sum(self.buffer)


def time_interleaved(graphs: dict[str, torch.cuda.CUDAGraph], rounds: int) -> dict[str, list[float]]:
    """Each round replays every graph once, in a fresh random order, after an L2 flush each."""
    flush, rng = L2Flush(), random.Random(0)
    samples: dict[str, list[float]] = {name: [] for name in graphs}
    for name in graphs:  # one untimed replay each
        graphs[name].replay()
    for _ in range(rounds):
        order = list(graphs)
        rng.shuffle(order)
        events = []
        for name in order:
            flush()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graphs[name].replay()
            end.record()
            events.append((name, start, end))
        torch.cuda.synchronize()
        for name, start, end in events:
            samples[name].append(start.elapsed_time(end))
    return samples


def environment() -> dict:
    env = {"python": platform.python_version(), "torch": torch.__version__}
    import triton

    env["triton"] = triton.__version__
    if torch.cuda.is_available():
        env["gpu"] = torch.cuda.get_device_name(0)
        env["cuda"] = torch.version.cuda
    return env


def markdown(cases: list[dict]) -> str:
    """One row per case: each way's median and its ratio to the bound; memory in MiB."""
    ways = [w for w in (*BACKWARD_WAYS, *BOTH_WAYS)]
    lines = [
        "Backward alone (forward outside the graph) and forward+backward, median ms; (x) = / bound.",
        "",
        "| case | dtype | gelu | " + " | ".join(ways) + " | grads ok |",
        "|---|---|---|" + "---|" * len(ways) + "---|",
    ]
    for case in cases:
        s = case["shape"]
        bound = case["ways"]["bound"].get("median_ms")
        cells = []
        for way in ways:
            median = case["ways"].get(way, {}).get("median_ms")
            if median is None:
                cells.append("")
            elif way == "bound" or bound is None:
                cells.append(f"{median:.4f}")
            else:
                cells.append(f"{median:.4f} ({median / bound:.3f})")
        ok = all(v.get("ok", True) for v in case["ways"].values())
        name = f"{case['group']} M{s['M']} K{s['K']} N{s['N']}"
        lines.append(f"| {name} | {case['dtype']} | {case['approximate']} | " + " | ".join(cells) + f" | {ok} |")
    lines += [
        "",
        "Memory beyond the inputs, MiB: held from forward to backward / peak over forward+backward.",
        "",
        "| case | dtype | gelu | " + " | ".join(FORWARDS) + " |",
        "|---|---|---|" + "---|" * len(FORWARDS),
    ]
    for case in cases:
        s = case["shape"]
        cells = []
        for way in FORWARDS:
            m = case["ways"][way].get("memory")
            cells.append(f"{m['held_after_forward_bytes'] / 2**20:.0f} / {m['peak_bytes'] / 2**20:.0f}" if m else "")
        name = f"{case['group']} M{s['M']} K{s['K']} N{s['N']}"
        lines.append(f"| {name} | {case['dtype']} | {case['approximate']} | " + " | ".join(cells) + " |")
    lines += ["", "Largest relative errors of out, dx, dW against float64 (tolerance: bf16 1e-2, fp16 2e-3, fp32 1e-5):", ""]
    for case in cases:
        s = case["shape"]
        worst = {way: max(v["errors"].values()) for way, v in case["ways"].items() if "errors" in v}
        text = ", ".join(f"{way} {e:.2e}" for way, e in worst.items())
        lines.append(f"- {case['group']} M{s['M']} K{s['K']} N{s['N']} {case['dtype']} {case['approximate']}: {text}")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for results.json and results.md")
    parser.add_argument("--quick", action="store_true", help="three shapes, under 2 minutes")
    parser.add_argument("--dry", action="store_true", help="CPU, Triton's interpreter: gradients only, tiny shapes")
    parser.add_argument("--rounds", type=int, default=None, help="samples per way and case (default 40, quick 25)")
    parser.add_argument("--gelu", choices=["none", "tanh", "both"], default="both")
    args = parser.parse_args()
    if args.dry and os.environ.get("TRITON_INTERPRET") != "1":
        parser.error("--dry runs the kernels in Triton's interpreter: set TRITON_INTERPRET=1")
    if not args.dry and not torch.cuda.is_available():
        parser.error("no CUDA GPU here (--dry checks the gradients on the CPU)")
    shapes = DRY if args.dry else QUICK if args.quick else SHAPES
    rounds = args.rounds or (25 if args.quick else 40)
    gelus = ("none", "tanh") if args.gelu == "both" else (args.gelu,)
    args.out.mkdir(parents=True, exist_ok=True)
    cases, began = [], time.time()
    for group, M, K, N, dtype in shapes:
        for approximate in gelus:
            t = time.time()
            case = bench_case(group, M, K, N, dtype, approximate, rounds, args.dry)
            cases.append(case)
            medians = {k: round(v["median_ms"], 4) for k, v in case["ways"].items() if "median_ms" in v}
            bad = [k for k, v in case["ways"].items() if not v.get("ok", True)]
            print(f"{group} M{M} K{K} N{N} {DTYPE_NAMES[dtype]} {approximate}: {medians} bad={bad} ({time.time() - t:.1f} s)", flush=True)
    results = {"format": 1, "environment": environment(), "rounds": rounds, "cases": cases}
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    (args.out / "results.md").write_text(markdown(cases))
    print(markdown(cases))
    print(f"{time.time() - began:.0f} s")
    ours_bad = [c for c in cases for way in ("fused-save", "fused-recompute", *FORCED) if not c["ways"][way]["ok"]]
    return 1 if ours_bad else 0


if __name__ == "__main__":
    sys.exit(main())
