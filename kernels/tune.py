"""Tune the fused GeGLU kernel's launch configs on the GPU at hand and write tuned_configs.yaml.

For each path (tma, pointer) and shape class (decode, small, large) it takes every 16-bit case
of the a100, models, decode and generated suites in that class (`--suites` for others), checks
each candidate config against a float64 reference, times all candidates and cuBLAS's gemm
interleaved (perfbot's timing engine: CUDA-graph replays, L2 flushed), and keeps the candidate
with the lowest geometric-mean time.

    python -m kernels.tune --out kernels/tuned_configs.yaml [--samples 10] [--where flatten=True]

Each candidate's log line also gives its registers per thread and shared memory per program, as
compiled, so that a config meant to put two programs on an SM can be seen to fit.

The file keeps the entries of other GPUs, and of the paths and classes not tuned this time.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import math
from pathlib import Path

import torch
import triton
import yaml

from kernels import configs
from kernels import geglu as geglu_module
from kernels.geglu import geglu
from kernels.subject import geglu_float64, subject
from perfbot.loading.subject import Case
from perfbot.loading.suites import load_suites
from perfbot.measuring import correctness, measure

ROOT = Path(__file__).resolve().parents[1]

# The precision the kernel promises (issue: bf16 3e-3, fp16 5e-4); a faster wrong config loses.
BOUNDS = {"bfloat16": 3e-3, "float16": 5e-4}


# Not generated-2 or generated-3: they are held out, to judge the kernel on shapes it was not tuned on.
TUNED_ON = ("a100", "models", "decode", "generated")


def cases_by_class(num_sms: int, suite_names: tuple[str, ...] = TUNED_ON) -> dict[str, list[Case]]:
    suites = load_suites(ROOT / "kernels" / "suites.yaml", subject)
    seen = set()
    by_class: dict[str, list[Case]] = {c: [] for c in configs.SHAPE_CLASSES}
    for name in suite_names:
        for case in suites[name].cases:
            key = (case.M, case.K, case.N, case.dtype)
            if case.dtype in BOUNDS and key not in seen:
                seen.add(key)
                by_class[configs.shape_class(case.M, case.K, case.N, num_sms)].append(case)
    return by_class


def _gemm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return x @ weight.T


def matches(config: dict, where: dict[str, str]) -> bool:
    return all(str(config.get(key)) == value for key, value in where.items())


def resources(x: torch.Tensor, weight: torch.Tensor, path: str, config: dict) -> str:
    """Registers per thread and shared memory per program of the compiled kernel."""
    plan = geglu_module._with_config(geglu_module.plan_for(x, weight, path), config, x.shape[0], "given")
    out = torch.empty(x.shape[0], weight.shape[0] // 2, dtype=x.dtype, device=x.device)
    kernel = geglu_module._launch(x, weight, out, plan, False)
    return f"{kernel.n_regs} registers, {kernel.metadata.shared} B shared"


def tune(path: str, cls: str, cases: list, samples: int, where: dict[str, str]) -> tuple[dict, float, list[str]]:
    candidates = [c for c in configs.candidates(path, cls) if matches(c, where)]
    if not candidates:
        raise SystemExit(f"no {path}/{cls} candidate matches {where}")
    compiled: dict[int, str] = {}
    times: dict[int, list[float]] = {i: [] for i in range(len(candidates))}
    gemm_times = []
    log = []
    for case in cases:
        dtype = getattr(torch, case.dtype)
        x = torch.randn(case.M, case.K, device="cuda").to(dtype)
        weight = (torch.randn(2 * case.N, case.K, device="cuda") / case.K**0.5).to(dtype)
        expected = geglu_float64(x, weight)
        captured = {"gemm": measure.capture(functools.partial(_gemm, x, weight), 2)}
        for i, config in enumerate(candidates):
            call = functools.partial(geglu, x, weight, path=path, config=config)
            try:
                error = correctness.check(call(), expected, BOUNDS[case.dtype]).relative_error
            except Exception as failure:  # noqa: BLE001 -- does not compile or launch here: not a choice
                log.append(f"  {case.name}: candidate {i} failed: {type(failure).__name__}: {str(failure)[:200]}")
                times[i].append(math.inf)
                continue
            if not error <= BOUNDS[case.dtype]:
                log.append(f"  {case.name}: candidate {i} wrong, relative error {error:.3g}")
                times[i].append(math.inf)
                continue
            captured[str(i)] = measure.capture(call, 2)  # the timing engine names what it times
            compiled.setdefault(i, resources(x, weight, path, config))
        timings = measure.time_interleaved(captured, samples).samples
        median = lambda values: sorted(values)[len(values) // 2]  # noqa: E731
        gemm_times.append(median(timings.pop("gemm")))
        for name, samples_ms in timings.items():
            times[int(name)].append(median(samples_ms))
        del captured, expected
        torch.cuda.empty_cache()
    geomean = {i: math.exp(sum(math.log(t) for t in ts) / len(ts)) for i, ts in times.items()}
    best = min(geomean, key=geomean.__getitem__)
    gemm_geomean = math.exp(sum(math.log(t) for t in gemm_times) / len(gemm_times))
    for i, value in sorted(geomean.items(), key=lambda item: item[1]):
        log.append(
            f"  {path}/{cls} candidate {i}: geomean {value:.4f} ms = {value / gemm_geomean:.3f}x gemm  "
            f"{candidates[i]}  ({compiled.get(i, 'not compiled')})"
        )
    for case, t, g in zip(cases, times[best], gemm_times, strict=False):
        log.append(
            f"  {path}/{cls} best on {case.name} ({case.M}x{case.K}->{case.N}): {t:.4f} ms, gemm {g:.4f} ms, "
            f"ratio {t / g:.3f}"
        )
    return candidates[best], geomean[best], log


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "kernels" / "tuned_configs.yaml", help="YAML file to update")
    parser.add_argument("--samples", type=int, default=10, help="timed samples per candidate and shape")
    parser.add_argument("--paths", default="tma,pointer", help="comma-separated paths to tune: tma, pointer")
    parser.add_argument("--classes", default=",".join(configs.SHAPE_CLASSES), help="comma-separated shape classes")
    parser.add_argument("--where", default="", help="only candidates with these values, e.g. flatten=True,one_dot=True")
    parser.add_argument(
        "--suites", default=",".join(TUNED_ON), help="comma-separated suites whose 16-bit cases to tune on"
    )
    args = parser.parse_args()
    where = dict(item.split("=", 1) for item in args.where.split(",") if item)
    props = torch.cuda.get_device_properties(0)
    table = (yaml.safe_load(args.out.read_text()) if args.out.is_file() else None) or {}
    entry = table.setdefault(props.name, {})
    entry["tuned"] = (
        f"{datetime.date.today()}, Triton {triton.__version__}, PyTorch {torch.__version__}, "
        f"by python -m kernels.tune --samples {args.samples}" + (f" --where {args.where}" if where else "")
    )
    classes = args.classes.split(",")
    cases_of_class = cases_by_class(props.multi_processor_count, tuple(args.suites.split(",")))
    for path in args.paths.split(","):
        for cls, cases in cases_of_class.items():
            if not cases or cls not in classes:
                continue
            if path == "tma" and cls in configs.ALL_ROWS_CLASSES:
                # Chosen per shape (configs.decode_by_waves); the entry kept in the file only
                # decides which path these classes prefer.
                print(f"tma/{cls}: chosen per shape by waves, not tuned", flush=True)
            else:
                best, geomean, log = tune(path, cls, cases, args.samples, where)
                print("\n".join(log), flush=True)
                entry.setdefault(path, {})[cls] = dict(
                    best
                )  # a copy: gemv and decode share candidates, and YAML would alias them
                entry.setdefault("geomean_ms", {}).setdefault(path, {})[cls] = round(geomean, 5)
    # geglu takes the path that was fastest for each shape class on this GPU.
    geomeans = entry.get("geomean_ms", {})
    entry["prefer"] = {
        cls: min((by_class[cls], path) for path, by_class in geomeans.items() if cls in by_class)[1]
        for cls in configs.SHAPE_CLASSES
        if any(cls in by_class for by_class in geomeans.values())
    }
    header = (
        "# Tuned launch configs of kernels/geglu.py: GPU name -> path -> shape class (16-bit inputs).\n"
        "# Written by `python -m kernels.tune` on the GPU it names; see kernels/configs.py.\n"
    )
    args.out.write_text(header + yaml.safe_dump(table, sort_keys=False))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
