"""What bounds the short decode launches: for every decode case (M <= 64) of the generated
suites, bf16, four launches timed interleaved by perfbot's engine (CUDA graphs, L2 flushed by a
read before each sample), one time_interleaved call per case:

- fused: kernels.geglu.geglu, checked against float64 first;
- copy:  the suites' copy baseline (reads and writes the weight's bytes);
- read:  a Triton kernel that only reads the weight's bytes (one float64 partial sum per program,
         so the loads stay), on a grid that fills the GPU; its sum checked against torch first;
- empty: an empty Triton kernel on the fused launch's grid (launch_plan's program count).

Per suite, a copy of a 1 GiB buffer is timed alone as the long copy's bandwidth, against which
each short copy's is given. From the repository root, on the GPU:

    PYTHONPATH=. python experiments/2026-12-02-h200-decode-bound/probe_launch_bound.py \
        --json experiments/2026-12-02-h200-decode-bound/bound.json \
        > experiments/2026-12-02-h200-decode-bound/bound.txt

`--dry-run` needs no GPU: it lists the cases and the grids they would launch, computed from
kernels.configs for an H200 (132 SMs). With TRITON_INTERPRET=1 it also checks the read and
empty kernels on small CPU tensors through Triton's interpreter.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's kernels/, with or without PYTHONPATH=.

from kernels import configs  # noqa: E402
from kernels.geglu import geglu, launch_plan  # noqa: E402
from kernels.subject import copy_weight, geglu_float64  # noqa: E402

SUITES_FILE = ROOT / "kernels" / "suites.yaml"
DEFAULT_SUITES = ("generated", "generated-2")
DECODE_MAX_ROWS = 64
FUSED_BOUND = 3e-3  # bf16, as probe_decode_share.py checks
TARGET_SHARE = 0.9  # the issue's: decode at or above 90% of copy
DRY_RUN_GPU, DRY_RUN_SMS = "NVIDIA H200", 132
REFERENCE_COPY_BYTES = 1 << 30
WARMUP_CALLS = 2
# The read kernel: 16 KiB of bf16 per program per step, four programs per SM, so that each SM
# has 64 KiB of loads in flight, more than the H200 needs per SM to stream at full bandwidth.
# The loads are 16 bytes wide only where Triton's launcher sees numel divisible by 16 (it is for
# every suite shape: K and N are multiples of 8); else they fall to 2-byte loads.
READ_BLOCK = 8192
READ_PROGRAMS_PER_SM = 4
READ_WARPS = 8
# The read kernel's sum of the weight, accumulated in fp32 per lane, may differ from torch's
# float64 sum by rounding: bounded by this share of the sum of |weight|.
READ_SUM_BOUND = 1e-5


@triton.jit
def _empty_kernel(ptr):
    # Launches and returns: the cost of a launch of this grid and nothing else.
    pass


@triton.jit
def _read_kernel(src_ptr, partial_ptr, numel, BLOCK: tl.constexpr, NUM_PROGRAMS: tl.constexpr):
    pid = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in tl.range(pid * BLOCK, numel, NUM_PROGRAMS * BLOCK):
        offsets = start + lanes
        acc += tl.load(src_ptr + offsets, mask=offsets < numel, other=0.0).to(tl.float32)
    # float64 across lanes: an integer-valued input then sums exactly (check_read_kernel).
    tl.store(partial_ptr + pid, tl.sum(acc.to(tl.float64), axis=0))


def read_programs(numel: int, num_sms: int) -> int:
    """The read kernel's grid: READ_PROGRAMS_PER_SM per SM, no more than there are blocks."""
    return max(1, min(READ_PROGRAMS_PER_SM * num_sms, triton.cdiv(numel, READ_BLOCK)))


def read_weight(weight: torch.Tensor, num_sms: int) -> torch.Tensor:
    """Every byte of `weight` loaded once; returns one partial sum per program."""
    flat = weight.reshape(-1)
    if flat.numel() >= 2**31:
        raise ValueError("read_weight: int32 offsets cover fewer than 2^31 elements")
    programs = read_programs(flat.numel(), num_sms)
    partials = torch.empty(programs, dtype=torch.float64, device=weight.device)
    _read_kernel[(programs,)](
        flat, partials, flat.numel(), BLOCK=READ_BLOCK, NUM_PROGRAMS=programs, num_warps=READ_WARPS
    )
    return partials


def launch_empty(target: torch.Tensor, programs: int, num_warps: int) -> torch.Tensor:
    _empty_kernel[(programs,)](target, num_warps=num_warps)
    return target


def check_read_kernel(weight: torch.Tensor, num_sms: int) -> str | None:
    """Why the read kernel's sum is wrong, or None. Twice: on `weight` itself against torch's
    float64 sum, within rounding; and exactly, on integers 1..200 of its shape (exact in bf16, in
    each lane's fp32 sum and in the float64 partials), which a missed, repeated or misplaced block
    would change."""
    ours = read_weight(weight, num_sms).sum().item()
    theirs = weight.double().sum().item()
    allowed = READ_SUM_BOUND * weight.double().abs().sum().item()
    if not abs(ours - theirs) <= allowed:
        return f"sum of the weight {ours!r}, torch's {theirs!r} (allowed difference {allowed:.3g})"
    generator = torch.Generator(device=weight.device).manual_seed(1)
    integers = torch.randint(1, 201, weight.shape, generator=generator, device=weight.device, dtype=torch.int16)
    integers = integers.to(weight.dtype)
    ours = read_weight(integers, num_sms).sum().item()
    theirs = integers.double().sum().item()
    if ours != theirs:
        return f"sum of integers {ours!r}, torch's {theirs!r} (must be equal)"
    return None


def fused_programs(plan: dict, M: int, N: int) -> int:
    """Programs of the fused kernel's launch for this plan, as kernels/geglu.py launches them."""
    tiles = triton.cdiv(M, plan["BLOCK_M"]) * triton.cdiv(N, plan["BLOCK_N"])
    if plan["path"] != "tma":
        return tiles
    per_sm = plan.get("programs_per_sm") or 1
    return min(per_sm * plan["num_sms"] // (plan.get("num_ctas") or 1), tiles)


def configs_plan(M: int, K: int, N: int, gpu: str, num_sms: int) -> dict:
    """The decode launch plan of launch_plan, from kernels.configs alone (no tensor, no GPU):
    the path the GPU's tuning prefers, TMA where K and N are multiples of 8 (a contiguous
    weight's rows then are 16-byte aligned), its BLOCK_M covering all rows and, on TMA, the
    decode config chosen by waves."""
    shape_class = configs.shape_class(M, K, N, num_sms)
    if shape_class not in configs.ALL_ROWS_CLASSES:
        raise ValueError(f"M={M} is not a decode shape")
    can_tma = K % 8 == 0 and N % 8 == 0
    preferred = configs.preferred_path(gpu, shape_class)
    if preferred is not None and (preferred != "tma" or can_tma):
        path = preferred
    else:
        path = "tma" if can_tma else "pointer"
    config = configs.lookup(gpu, path, shape_class, torch.bfloat16)
    plan = {**config, "path": path, "gpu": gpu, "num_sms": num_sms, "shape_class": shape_class}
    plan["BLOCK_M"] = max(16, triton.next_power_of_2(M))
    if path == "tma":
        plan = {**plan, "programs_per_sm": 1, "num_ctas": 1, **configs.decode_by_waves(plan["BLOCK_M"], N, num_sms)}
    return plan


def decode_cases(suite_names: list[str], suites: dict) -> tuple[list[tuple[str, list[dict]]], list[str]]:
    """[(suite, its decode cases)] and a note for each suite or case left out."""
    chosen, notes = [], []
    for name in suite_names:
        suite = suites.get(name)
        if suite is None:
            notes.append(f"suite {name}: not in {SUITES_FILE.name}, skipped")
            continue
        cases = []
        for case in suite.get("cases", []):
            dtype = case.get("dtype", suite.get("dtype"))
            if case["M"] > DECODE_MAX_ROWS:
                continue
            if dtype != "bfloat16":
                notes.append(f"suite {name}, case {case['name']}: dtype {dtype}, not bf16, skipped")
                continue
            cases.append({"name": case["name"], "M": case["M"], "K": case["K"], "N": case["N"]})
        chosen.append((name, cases))
    return chosen, notes


def weight_bytes(K: int, N: int) -> int:
    return 2 * N * K * 2  # [2N, K] bf16


def share_of_copy(weight_size: int, fused_ms: float, copy_ms: float) -> float:
    """The fused kernel's read of the weight as a share of copy's bandwidth (summarize.py's)."""
    return (weight_size / fused_ms) / (2 * weight_size / copy_ms)


def gb_per_s(size: int, ms: float) -> float:
    return size / ms / 1e6


def dry_run(chosen: list[tuple[str, list[dict]]]) -> None:
    print(
        f"dry run: grids from kernels.configs for an {DRY_RUN_GPU} with num_sms={DRY_RUN_SMS} "
        "(launch_plan needs a CUDA tensor for the GPU's SM count); nothing is timed"
    )
    for suite, cases in chosen:
        print(f"== suite {suite}: {len(cases)} decode cases; and a copy of {REFERENCE_COPY_BYTES >> 20} MiB alone")
        for case in cases:
            M, K, N = case["M"], case["K"], case["N"]
            plan = configs_plan(M, K, N, DRY_RUN_GPU, DRY_RUN_SMS)
            size = weight_bytes(K, N)
            print(
                f"  {case['name']:24} M={M:<3} K={K:<5} N={N:<6} weight {size / 1e6:7.1f} MB  "
                f"{plan['shape_class']}/{plan['path']} BLOCK_M={plan['BLOCK_M']} BLOCK_N={plan['BLOCK_N']} "
                f"programs/SM={plan.get('programs_per_sm', 1)}: fused and empty grid {fused_programs(plan, M, N)}, "
                f"read grid {read_programs(size // 2, DRY_RUN_SMS)}"
            )
    if os.environ.get("TRITON_INTERPRET") == "1":
        weight = (torch.randn(2 * 40, 72) / 72**0.5).to(torch.bfloat16)
        why = check_read_kernel(weight, 4)
        print(f"interpreter: read kernel {'wrong: ' + why if why else 'sums right'} on a {tuple(weight.shape)} weight")
        launch_empty(torch.zeros(1), 3, 4)
        print("interpreter: empty kernel launched on a grid of 3")


def measure_reference_copy(measure, samples: int) -> dict:
    buffer = torch.empty(REFERENCE_COPY_BYTES // 2, dtype=torch.bfloat16, device="cuda").normal_()
    captured = {"copy-1GiB": measure.capture(lambda: copy_weight(buffer, buffer), WARMUP_CALLS)}
    timed = measure.time_interleaved(captured, samples).samples["copy-1GiB"]
    ms = statistics.median(timed)
    return {
        "bytes": REFERENCE_COPY_BYTES,
        "median_ms": ms,
        "copy_GBps": gb_per_s(2 * REFERENCE_COPY_BYTES, ms),
        "samples_ms": timed,
    }


def measure_case(case: dict, samples: int, num_sms: int, correctness, measure) -> dict:
    M, K, N = case["M"], case["K"], case["N"]
    generator = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(M, K, generator=generator, device="cuda").to(torch.bfloat16)
    weight = (torch.randn(2 * N, K, generator=generator, device="cuda") / K**0.5).to(torch.bfloat16)
    result = {**case, "weight_bytes": weight_bytes(K, N)}
    check = correctness.check(geglu(x, weight), geglu_float64(x, weight), FUSED_BOUND)
    result["fused_relative_error"] = check.relative_error
    if not check.passed:
        result["error"] = f"fused wrong: relative error {check.relative_error:.3g} > {FUSED_BOUND}"
        return result
    why = check_read_kernel(weight, num_sms)
    if why is not None:
        result["error"] = f"read kernel wrong: {why}"
        return result
    # After geglu's first call, so that a config it autotuned is the one the plan names.
    plan = launch_plan(x, weight)
    programs = fused_programs(plan, M, N)
    from_configs = fused_programs(configs_plan(M, K, N, plan["gpu"], num_sms), M, N)
    result["plan"] = {k: v for k, v in plan.items() if isinstance(v, (int, float, str, bool)) or v is None}
    result["fused_programs"] = programs
    result["configs_programs"] = from_configs  # what --dry-run computes; should equal fused_programs
    result["read_programs"] = read_programs(weight.numel(), num_sms)
    target = torch.zeros(1, device="cuda")
    captured = {
        "fused": measure.capture(lambda: geglu(x, weight), WARMUP_CALLS),
        "copy": measure.capture(lambda: copy_weight(x, weight), WARMUP_CALLS),
        "read": measure.capture(lambda: read_weight(weight, num_sms), WARMUP_CALLS),
        "empty": measure.capture(lambda: launch_empty(target, programs, plan["num_warps"]), WARMUP_CALLS),
    }
    timed = measure.time_interleaved(captured, samples).samples
    del captured
    torch.cuda.empty_cache()
    result["samples_ms"] = timed
    result["median_ms"] = {key: statistics.median(values) for key, values in timed.items()}
    return result


def derive(result: dict, reference: dict) -> None:
    """The shares and bandwidths of one timed case, added to it."""
    ms, size = result["median_ms"], result["weight_bytes"]
    result["fused_share_of_copy"] = share_of_copy(size, ms["fused"], ms["copy"])
    result["copy_GBps"] = gb_per_s(2 * size, ms["copy"])
    result["copy_share_of_1GiB_copy"] = result["copy_GBps"] / reference["copy_GBps"]
    result["read_GBps"] = gb_per_s(size, ms["read"])
    result["fused_read_GBps"] = gb_per_s(size, ms["fused"])
    result["empty_share_of_fused"] = ms["empty"] / ms["fused"]


def case_line(result: dict) -> str:
    shape = f"M={result['M']:<3} K={result['K']:<5} N={result['N']:<6}"
    head = f"{result['name']:24} {shape} {result['weight_bytes'] / 1e6:7.1f} MB"
    if "error" in result:
        return f"{head}  NOT TIMED: {result['error']}"
    ms = result["median_ms"]
    mark = "" if result["fused_share_of_copy"] >= TARGET_SHARE else f"  below {TARGET_SHARE}"
    differs = result["configs_programs"] != result["fused_programs"]
    grid = f"  (configs grid {result['configs_programs']})" if differs else ""
    return (
        f"{head}  fused {ms['fused']:.4f}  copy {ms['copy']:.4f}  read {ms['read']:.4f}  empty {ms['empty']:.4f} ms  "
        f"fused at {result['fused_share_of_copy']:.3f} of copy{mark}  "
        f"copy {result['copy_GBps']:.0f} GB/s = {result['copy_share_of_1GiB_copy']:.3f} of 1 GiB's  "
        f"read {result['read_GBps']:.0f} GB/s  empty {result['empty_share_of_fused']:.3f} of fused  "
        f"grid {result['fused_programs']}{grid}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--suite",
        action="append",
        help=f"a suite of {SUITES_FILE.name} (repeatable); default: {', '.join(DEFAULT_SUITES)}",
    )
    parser.add_argument("--samples", type=int, default=30, help="interleaved rounds per case (default 30)")
    parser.add_argument("--json", type=Path, help="also write everything, samples included, to this file")
    parser.add_argument("--dry-run", action="store_true", help="list the cases and their grids; needs no GPU")
    args = parser.parse_args(argv)
    suites = yaml.safe_load(SUITES_FILE.read_text())
    chosen, notes = decode_cases(args.suite or list(DEFAULT_SUITES), suites)
    for note in notes:
        print(note)
    if args.dry_run:
        dry_run(chosen)
        return 0
    if not torch.cuda.is_available():
        print("no CUDA GPU here: use --dry-run", file=sys.stderr)
        return 2
    from perfbot.measuring import correctness, measure

    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    header = {
        "gpu": torch.cuda.get_device_name(),
        "num_sms": num_sms,
        "triton": triton.__version__,
        "torch": torch.__version__,
        "samples": args.samples,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
    print(
        f"{header['gpu']} ({num_sms} SMs), Triton {header['triton']}, torch {header['torch']}, "
        f"{args.samples} samples, {header['date']}; medians in ms; a copy's GB/s counts its read and write"
    )
    report = {"header": header, "notes": notes, "suites": []}
    for suite, cases in chosen:
        reference = measure_reference_copy(measure, args.samples)
        torch.cuda.empty_cache()  # the 1 GiB buffer and its graph's memory
        print(
            f"== suite {suite}: {len(cases)} decode cases; copy of 1 GiB alone: "
            f"{reference['median_ms']:.4f} ms, {reference['copy_GBps']:.0f} GB/s"
        )
        results = []
        for case in cases:
            result = measure_case(case, args.samples, num_sms, correctness, measure)
            if "error" not in result:
                derive(result, reference)
            print(case_line(result), flush=True)
            results.append(result)
        below = [r for r in results if "error" not in r and r["fused_share_of_copy"] < TARGET_SHARE]
        print(f"   {len(below)} of {len(results)} below {TARGET_SHARE} of copy")
        report["suites"].append({"name": suite, "reference_copy": reference, "cases": results})
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
