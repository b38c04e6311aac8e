"""Issue 35's Gluon probe on the H200, run with Triton 3.9 (gpu-gluon.sh sets it up): every
variant of geglu_gluon.py against cuBLAS's matmul alone (gemm) and against kernels/geglu.py's
Triton kernel compiled by the same Triton 3.9, on the models suite's large rows and on prefill
shapes of both generated sets.

Each implementation is checked first against a float64 reference on fresh random inputs, with
its output poisoned with NaN beforehand (both GELUs for the Gluon variants; bf16 tolerance 1e-2,
the subject's), and only then timed: perfbot's own engine (CUDA graphs, L2 flushed before each
sample, every implementation once per round in a rotating order), the median of the rounds.

    python gpu_gluon.py --out OUT.json [--rounds 15] [--shapes models,prefill]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time
import zlib

import torch
import torch.nn.functional as F
import triton

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.append(os.path.abspath(os.path.join(HERE, "..", "..")))  # after PYTHONPATH: gpu-gluon.sh names the kernels measured

import geglu_gluon  # noqa: E402

from kernels.geglu import geglu, launch_plan  # noqa: E402
from perfbot.measuring.measure import GraphTimer, capture, time_rounds  # noqa: E402

SHAPES = {
    "smoke": [("odd-m300", 300, 1000, 1000)],  # every variant's first run, small: a hang costs little
    "models": [  # kernels/suites.yaml's models suite
        ("gemma-2b", 8192, 2048, 16384),
        ("gemma-7b", 8192, 3072, 24576),
        ("gemma-3-4b", 8192, 2560, 10240),
        ("gemma-3-12b", 8192, 3840, 15360),
        ("gemma-3-27b", 8192, 5376, 21504),
        ("t5-v1.1-xl", 8192, 2048, 5120),
        ("t5-v1.1-xxl", 8192, 4096, 10240),
    ],
    "prefill": [  # both generated sets' worst prefill rows, and two of their large ones
        ("mistral-7b-m198", 198, 4096, 14336),
        ("llama-2-13b-m153", 153, 5120, 13824),
        ("llama-2-13b-m522", 522, 5120, 13824),
        ("odd-m638", 638, 8128, 8440),
        ("llama-3-70b-m646", 646, 8192, 28672),
        ("odd-m8660", 8660, 5264, 11456),
    ],
}
VARIANTS = {  # name: geglu_gluon keyword arguments
    "gluon-c2-s4": {"cluster": 2, "stages": 4},
    "gluon-c1-s4": {"cluster": 1, "stages": 4},
}
TOLERANCE = 1e-2  # the subject's bf16 bound (kernels/subject.py)


def inputs(M, K, N, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(M, K, generator=g, device="cuda").to(torch.bfloat16)
    w = (torch.randn(2 * N, K, generator=g, device="cuda") / K**0.5).to(torch.bfloat16)
    return x, w


def relative_error(out, x, w, approximate):
    z1, z2 = (x.double() @ w.double().T).chunk(2, dim=-1)
    ref = z1 * F.gelu(z2, approximate=approximate)
    if not torch.isfinite(out).all():
        return float("inf")
    return ((out.double() - ref).norm() / ref.norm()).item()


def check(name, run, M, K, N, approximate):
    x, w = inputs(M, K, N, seed=zlib.crc32(f"{name} {M} {K} {N} {approximate}".encode()))
    out = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device="cuda")
    run(x, w, out, approximate)
    torch.cuda.synchronize()
    return relative_error(out, x, w, approximate)


def implementations():
    impls = {
        name: (lambda x, w, out, a, kw=kw: geglu_gluon.geglu_gluon(x, w, out, approximate=a, **kw))
        for name, kw in VARIANTS.items()
    }
    impls["fused"] = lambda x, w, out, a: geglu(x, w, approximate=a, out=out)
    return impls


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--shapes", default="models,prefill")
    args = parser.parse_args()
    props = torch.cuda.get_device_properties(0)
    record = {
        "command": " ".join(sys.argv),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "gpu": props.name,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "triton_path": triton.__file__,
        "ptxas": os.environ.get("TRITON_PTXAS_BLACKWELL_PATH", "the wheel's"),
        "rounds": args.rounds,
        "shapes": [],
    }
    impls = implementations()
    for group in args.shapes.split(","):
        for case, M, K, N in SHAPES[group]:
            started = time.time()
            row = {"case": case, "M": M, "K": K, "N": N, "errors": {}, "ms": {}, "plan": None}
            ok = {}
            for name, run in impls.items():
                gelus = ("none", "tanh") if name.startswith("gluon") else ("none",)
                try:
                    errors = {a: check(name, run, M, K, N, a) for a in gelus}
                except Exception as error:  # noqa: BLE001 -- a variant that fails to compile or launch is reported
                    errors = {"failed": f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"}
                row["errors"][name] = errors
                ok[name] = all(isinstance(e, float) and e <= TOLERANCE for e in errors.values())
            x, w = inputs(M, K, N, seed=1)
            row["plan"] = {k: v for k, v in launch_plan(x, w).items() if isinstance(v, (int, str, bool))}
            out = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
            calls = {name: (lambda run=impls[name], x=x, w=w, out=out: run(x, w, out, "none")) for name in impls if ok[name]}
            calls["gemm"] = lambda x=x, w=w: x @ w.T
            captured = {name: capture(fn, warmup_calls=3) for name, fn in calls.items()}
            timings = time_rounds(GraphTimer(captured), list(captured), samples=args.rounds)
            row["samples_ms"] = timings.samples
            row["ms"] = {name: statistics.median(s) for name, s in timings.samples.items()}
            gemm = row["ms"]["gemm"]
            row["over_gemm"] = {name: ms / gemm for name, ms in row["ms"].items()}
            if "fused" in timings.samples:
                row["paired_over_fused"] = {
                    name: statistics.median(a / b for a, b in zip(s, timings.samples["fused"], strict=True))
                    for name, s in timings.samples.items()
                }
            row["seconds"] = round(time.time() - started, 1)
            record["resident_clusters"] = {str(k): v for k, v in geglu_gluon.RESIDENT_CLUSTERS.items()}
            record["shapes"].append(row)
            del captured, x, w, out
            torch.cuda.empty_cache()
            cells = "  ".join(f"{n} {row['over_gemm'][n]:.3f}" for n in row["ms"] if n != "gemm")
            bad = {n: e for n, e in row["errors"].items() if not ok[n]}
            print(f"{case:18s} gemm {gemm:.4f} ms  {cells}  {'WRONG ' + str(bad) if bad else ''}", flush=True)
            with open(args.out, "w") as f:
                json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
