"""Measured causes of issue 35's misses on the H200, bf16, erf. Every fused launch is checked
against float64 first; all launches of a case are timed interleaved by perfbot's engine (CUDA
graphs, L2 flushed before each sample), medians. Three parts:

- prefill: every prefill case of both generated sets with K a multiple of 16 (and odd M=100,
  whose K is not), up to 2048 rows. The plan at the shape, and the same plan's tile on a "full"
  shape of the same K: every row real and every persistent program as many tiles as the shape's
  busiest program has, so nothing is padded and no SM idles in a last wave. cuBLAS's matmul on
  both. Then fused / gemm at the shape is the product of three measured factors:
      fused(shape) / fused(full)   ~1 where the busiest program's tiles set the time,
      fused(full) / gemm(full)     the tile's own rate against cuBLAS's, with nothing wasted,
      gemm(full) / gemm(shape)     what cuBLAS takes for the work the plan's launch does.
  The other row height (128 if the plan has 64-row tiles, else 64) is timed the same two ways.
- align: the decode cases whose K is not a multiple of 16 (odd M=1 and M=26), fused on the inputs
  as they are and on the same values in rows padded to 16 elements (a view of a wider buffer),
  against compiled and max-autotune on the inputs as they are, and gemm.
- split: the decode cases with fewer tiles than half the SMs (odd M=21, bert-large M=1): every
  split of K from 1 part up, the plan's split with its arrival counts zeroed once outside the
  graph (no fill kernel in it), against eager, compiled and gemm, and copy (its bandwidth).

    PYTHONPATH=. python experiments/2026-12-02-h200-miss-causes/probe_miss_causes.py \
        --json OUT/causes.json > OUT/causes.txt
    python experiments/2026-12-02-h200-miss-causes/probe_miss_causes.py --dry-run   # no GPU: the cases

`--parts` takes a comma-separated subset of prefill,align,split,group (group: every prefill case
with its tuned GROUP_M and with all row blocks in one group).
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
from pathlib import Path

import torch
import triton
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's kernels/, with or without PYTHONPATH=.

from kernels import configs  # noqa: E402
from kernels import geglu as geglu_module  # noqa: E402
from kernels.geglu import geglu, launch_plan  # noqa: E402
from kernels.subject import compiled, copy_weight, eager_geglu, geglu_float64, max_autotune  # noqa: E402

SUITES = ("generated", "generated-2")
FUSED_BOUND = 3e-3  # bf16, as the other probes of issue 35 check
BASELINE_BOUND = 1e-2  # bf16, the subject's tolerance: eager's three roundings, and compiled's
WARMUP_CALLS = 2
MAX_PREFILL_ROWS = 2048
ALIGN_CASES = ("odd-m1", "odd-m26")
SPLIT_CASES = ("odd-m21", "bert-large-m1")
DRY_RUN_SMS = 132
LAUNCH_KEYS = (
    "BLOCK_M",
    "BLOCK_N",
    "BLOCK_K",
    "GROUP_M",
    "num_warps",
    "num_stages",
    "warp_specialize",
    "epilogue_subtile",
    "one_dot",
    "flatten",
    "programs_per_sm",
    "maxnreg",
    "num_ctas",
    "split_k",
)


def suite_cases() -> dict[str, tuple[str, int, int, int]]:
    """Every case of the generated sets, and of the pr suite (which `--cases` may name)."""
    suites = yaml.safe_load((ROOT / "kernels" / "suites.yaml").read_text())
    return {c["name"]: (s, c["M"], c["K"], c["N"]) for s in ("pr", *SUITES) for c in suites[s]["cases"]}


def prefill_names(cases: dict) -> list[str]:
    return [
        n
        for n, (suite, M, K, _) in cases.items()
        if suite in SUITES and 64 < M <= MAX_PREFILL_ROWS and (K % 16 == 0 or n == "odd-m100")
    ]


def launch_config(plan: dict) -> dict:
    return {k: plan[k] for k in LAUNCH_KEYS if k in plan}


def other_height(plan: dict) -> dict:
    """The prefill tile of the other row height: the 64-row prefill tile, or the large class's."""
    if plan["BLOCK_M"] == 128:
        return dict(configs.PREFILL_64_ROWS)
    return launch_config(configs.lookup(plan["gpu"], "tma", "large", torch.bfloat16))


def busiest(M: int, N: int, config: dict, num_sms: int) -> tuple[int, int, int]:
    """(tiles, programs, tiles of the busiest program) of a persistent launch of `config`."""
    tiles = triton.cdiv(M, config["BLOCK_M"]) * triton.cdiv(N, config["BLOCK_N"])
    programs = min((config.get("programs_per_sm") or 1) * num_sms // (config.get("num_ctas") or 1), tiles)
    return tiles, programs, triton.cdiv(tiles, programs)


def full_shape(M: int, N: int, config: dict, num_sms: int) -> tuple[int, int]:
    """(M, N) of a shape whose tiles are all real and give every program the busiest one's count:
    row blocks times column blocks = programs times that count, the row blocks as near M's."""
    _, programs, per_program = busiest(M, N, config, num_sms)
    total = programs * per_program
    rows = triton.cdiv(M, config["BLOCK_M"])
    row_blocks = min((d for d in range(1, total + 1) if total % d == 0), key=lambda d: (abs(d - rows), -d))
    return row_blocks * config["BLOCK_M"], total // row_blocks * config["BLOCK_N"]


def inputs(M: int, K: int, N: int, row: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """x [M, K] and weight [2N, K], bf16, scaled so z is of order 1; in rows of `row` elements
    (views of wider buffers) when given."""
    generator = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(M, K, generator=generator, device="cuda").to(torch.bfloat16)
    weight = (torch.randn(2 * N, K, generator=generator, device="cuda") / K**0.5).to(torch.bfloat16)
    if row is None:
        return x, weight
    wide_x = torch.zeros(M, row, dtype=torch.bfloat16, device="cuda")
    wide_w = torch.zeros(2 * N, row, dtype=torch.bfloat16, device="cuda")
    wide_x[:, :K], wide_w[:, :K] = x, weight
    return wide_x[:, :K], wide_w[:, :K]


def checked(label: str, call, expected: torch.Tensor, bound: float = FUSED_BOUND) -> None:
    out = call()
    relative = (torch.linalg.vector_norm(out.double() - expected) / torch.linalg.vector_norm(expected)).item()
    if not relative <= bound:
        raise SystemExit(f"{label}: relative error {relative:.3g} over {bound}; nothing timed")


def timed(calls: dict, samples: int) -> dict[str, float]:
    from perfbot.measuring import measure

    captured = {label: measure.capture(call, WARMUP_CALLS) for label, call in calls.items()}
    timings = measure.time_interleaved(captured, samples)
    return {label: statistics.median(values) for label, values in timings.samples.items()}


def prefill_case(name: str, M: int, K: int, N: int, samples: int) -> dict:
    x, weight = inputs(M, K, N)
    plan = launch_plan(x, weight)
    num_sms = plan["num_sms"]
    own, other = launch_config(plan), other_height(plan)
    calls, shapes_used = {}, {"shape": (M, N)}
    expected = geglu_float64(x, weight)
    calls["plan"] = lambda: geglu(x, weight)
    calls["other"] = lambda: geglu(x, weight, config=other)
    checked(f"{name} plan", calls["plan"], expected)
    checked(f"{name} other", calls["other"], expected)
    calls["gemm"] = lambda: x @ weight.T
    del expected
    for label, config in (("plan", own), ("other", other)):
        Mf, Nf = full_shape(M, N, config, num_sms)
        shapes_used[f"{label} full"] = (Mf, Nf)
        xf, wf = inputs(Mf, K, Nf)
        checked(f"{name} {label} full", lambda xf=xf, wf=wf, c=config: geglu(xf, wf, config=c), geglu_float64(xf, wf))
        calls[f"{label} full"] = lambda xf=xf, wf=wf, c=config: geglu(xf, wf, config=c)
        calls[f"gemm {label} full"] = lambda xf=xf, wf=wf: xf @ wf.T
    medians = timed(calls, samples)
    tiles = {label: busiest(M, N, config, num_sms) for label, config in (("plan", own), ("other", other))}
    return {
        "case": name,
        "M": M,
        "K": K,
        "N": N,
        "plan": own,
        "other": other,
        "shapes": shapes_used,
        "tiles": tiles,
        "filled": {
            label: configs.filled(M, N, c["BLOCK_M"], c["BLOCK_N"], num_sms)
            for label, c in (("plan", own), ("other", other))
        },
        "medians_ms": medians,
    }


def print_prefill(row: dict) -> None:
    m = row["medians_ms"]
    print(f"{row['case']} M={row['M']} K={row['K']} N={row['N']}: gemm {m['gemm']:.4f} ms")
    for label in ("plan", "other"):
        config, (tiles, programs, per) = row[label], row["tiles"][label]
        Mf, Nf = row["shapes"][f"{label} full"]
        at_shape, full, gemm_full = m[label], m[f"{label} full"], m[f"gemm {label} full"]
        print(
            f"  {label:5} {config['BLOCK_M']}x{config['BLOCK_N']}: {tiles} tiles on {programs} programs, "
            f"busiest {per}, filled {row['filled'][label]:.3f}; {at_shape:.4f} ms = {at_shape / m['gemm']:.3f}x gemm"
        )
        print(
            f"        full {Mf}x{Nf}: fused {full:.4f}, gemm {gemm_full:.4f}; "
            f"shape/full {at_shape / full:.3f} x tile rate {full / gemm_full:.3f} "
            f"x gemm full/shape {gemm_full / m['gemm']:.3f}"
        )


def align_case(name: str, M: int, K: int, N: int, samples: int) -> dict:
    row = -(-K // 16) * 16
    x, weight = inputs(M, K, N)
    xa, wa = inputs(M, K, N, row)
    expected = geglu_float64(x, weight)
    calls = {
        "fused": lambda: geglu(x, weight),
        f"fused, rows of {row}": lambda: geglu(xa, wa),
        "compiled": lambda: compiled(x, weight),
        "max-autotune": lambda: max_autotune(x, weight),
        "gemm": lambda: x @ weight.T,
        f"gemm, rows of {row}": lambda: xa @ wa.T,
    }
    for label in ("fused", f"fused, rows of {row}"):
        checked(f"{name} {label}", calls[label], expected)
    for label in ("compiled", "max-autotune"):  # the baselines as perfbot's subject checks them
        checked(f"{name} {label}", calls[label], expected, BASELINE_BOUND)
    medians = timed(calls, samples)
    return {"case": name, "M": M, "K": K, "N": N, "plan": launch_config(launch_plan(x, weight)), "medians_ms": medians}


def split_case(name: str, M: int, K: int, N: int, samples: int) -> dict:
    x, weight = inputs(M, K, N)
    plan = launch_plan(x, weight)
    base = launch_config(plan)
    k_tiles = triton.cdiv(K, base["BLOCK_K"])
    whole = {**base, **configs.decode_by_waves(base["BLOCK_M"], N, plan["num_sms"]), "split_k": 1}
    splits = {1: whole} | {
        s: {**base, "split_k": s, "programs_per_sm": 1, "flatten": False} for s in range(2, min(k_tiles, 8) + 1)
    }
    expected = geglu_float64(x, weight)
    calls = {f"split {s}": (lambda c=c: geglu(x, weight, config=c)) for s, c in splits.items()}
    kept = torch.zeros(triton.cdiv(N, base["BLOCK_N"]), dtype=torch.int32, device="cuda")
    planned = max(plan["split_k"], 2)
    real_counters = geglu_module._arrival_counters

    def with_kept_counters():
        geglu_module._arrival_counters = lambda device, tiles, stream=None: kept[:tiles]
        try:
            return geglu(x, weight, config=splits[planned])
        finally:
            geglu_module._arrival_counters = real_counters

    calls[f"split {planned}, counts zeroed once"] = with_kept_counters
    for label, call in calls.items():
        checked(f"{name} {label}", call, expected)
    calls |= {
        "eager": lambda: eager_geglu(x, weight),
        "compiled": lambda: compiled(x, weight),
        "gemm": lambda: x @ weight.T,
        "copy": lambda: copy_weight(x, weight),
    }
    checked(f"{name} compiled", calls["compiled"], expected, BASELINE_BOUND)
    medians = timed(calls, samples)
    return {
        "case": name,
        "M": M,
        "K": K,
        "N": N,
        "plan": base,
        "k_tiles": k_tiles,
        "medians_ms": medians,
        "weight_bytes": weight.numel() * weight.element_size(),
    }


def group_case(name: str, M: int, K: int, N: int, samples: int) -> dict:
    """The plan and the other row height, each with the tuned GROUP_M (8), the plan's, and every row
    block in one group (each column block of weight then is read from memory once, where 8 row blocks to
    a group read it once per group)."""
    x, weight = inputs(M, K, N)
    plan = launch_plan(x, weight)
    expected = geglu_float64(x, weight)
    calls = {}
    for label, config in (("plan", launch_config(plan)), ("other", other_height(plan))):
        row_blocks = triton.cdiv(M, config["BLOCK_M"])
        for group in sorted({8, config["GROUP_M"], row_blocks}):  # 8: both tuned tiles' GROUP_M
            key = f"{label} {config['BLOCK_M']}x{config['BLOCK_N']} GROUP_M {group}"
            calls[key] = lambda c={**config, "GROUP_M": group}: geglu(x, weight, config=c)
            checked(f"{name} {key}", calls[key], expected)
    calls["gemm"] = lambda: x @ weight.T
    del expected
    medians = timed(calls, samples)
    return {"case": name, "M": M, "K": K, "N": N, "plan": launch_config(plan), "medians_ms": medians}


def print_medians(row: dict, against: str) -> None:
    m = row["medians_ms"]
    print(f"{row['case']} M={row['M']} K={row['K']} N={row['N']}: plan {row['plan']}")
    for label, ms in sorted(m.items(), key=lambda kv: kv[1]):
        extra = f"  {row['weight_bytes'] * 2 / ms / 1e9:.2f} TB/s" if label == "copy" else ""
        print(f"  {label:34} {ms:.4f} ms  {ms / m[against]:.3f}x {against}{extra}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--parts", default="prefill,align,split")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--cases", help="comma-separated case names for the group part (default: the prefill cases)")
    parser.add_argument("--dry-run", action="store_true", help="list the cases and full shapes; needs no GPU")
    args = parser.parse_args()
    parts = args.parts.split(",")
    cases = suite_cases()
    if args.dry_run:
        large = configs.lookup("NVIDIA H200", "tma", "large", torch.bfloat16)
        for name in prefill_names(cases):
            _, M, K, N = cases[name]
            rows = configs.prefill_by_waves(M, N, DRY_RUN_SMS)
            config = launch_config(rows or large)
            print(
                name,
                M,
                K,
                N,
                config["BLOCK_M"],
                busiest(M, N, config, DRY_RUN_SMS),
                full_shape(M, N, config, DRY_RUN_SMS),
            )
        return
    print(
        f"{torch.cuda.get_device_name()}, Triton {triton.__version__}, torch {torch.__version__}, "
        f"{args.samples} samples, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; medians in ms"
    )
    results = {"gpu": torch.cuda.get_device_name(), "triton": triton.__version__, "torch": torch.__version__}
    if "split" in parts:
        results["split"] = []
        for name in SPLIT_CASES:
            row = split_case(name, *cases[name][1:], args.samples)
            print_medians(row, "gemm")
            results["split"].append(row)
    if "align" in parts:
        results["align"] = []
        for name in ALIGN_CASES:
            row = align_case(name, *cases[name][1:], args.samples)
            print_medians(row, "fused")
            results["align"].append(row)
    if "prefill" in parts:
        results["prefill"] = []
        for name in prefill_names(cases):
            row = prefill_case(name, *cases[name][1:], args.samples)
            print_prefill(row)
            results["prefill"].append(row)
    if "group" in parts:
        results["group"] = []
        for name in args.cases.split(",") if args.cases else prefill_names(cases):
            row = group_case(name, *cases[name][1:], args.samples)
            print_medians(row, "gemm")
            results["group"].append(row)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
