"""How far `perfbot explain`'s CPU path gets on this repository's kernels: every case of every
suite in kernels/suites.yaml, each Triton implementation (fused and fused-pointer, the latter on
every case whether its suite lists it or not), compiled for a named GPU on this CPU as explain
compiles it (perfbot/compiling/offline.py, without line info), each call timed.

Run from the repository's root, without TRITON_INTERPRET:

    env -u TRITON_INTERPRET PYTHONPATH=. python experiments/2026-12-02-cpu-explain/measure.py \
        --out experiments/2026-12-02-cpu-explain/compiles.tsv

Triton's cache starts empty (a temporary TRITON_CACHE_DIR): a call whose kernel's cubin an earlier
call in this process made already was a cache hit, and says so ("new" no).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

os.environ["TRITON_DISABLE_LINE_INFO"] = "1"  # as explain compiles (perfbot/jobs/explain.py)
if os.environ.get("TRITON_INTERPRET"):
    sys.exit("unset TRITON_INTERPRET: Triton would interpret the kernels, not compile them")

import torch  # noqa: E402
import triton  # noqa: E402

from perfbot.compiling import artifacts, launches, offline  # noqa: E402
from perfbot.loading.package import load_subject  # noqa: E402

IMPLEMENTATIONS = ("fused", "fused-pointer")
COLUMNS = (
    "suite case dtype M K N implementation listed result seconds inputs_s new path source kernel grid "
    "warps stages registers spill_store_B spill_load_B static_shared_B dynamic_shared_B blocks_per_sm "
    "limited_by mma tma async_copy"
).split()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--gpu", default=offline.DEFAULT_GPU)
    parser.add_argument("--suite", action="append", help="only these suites (default: every one)")
    args = parser.parse_args()
    os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="explain-measure-cache-"))
    loaded = load_subject(Path("kernels").resolve())
    gpu = offline.gpu_named(args.gpu)
    seen: set[str] = set()
    lines = ["\t".join(COLUMNS)]
    started = time.perf_counter()
    with offline.compiling_for(gpu):
        for suite in loaded.suites.values():
            if args.suite and suite.name not in args.suite:
                continue
            for case in suite.cases:
                generator = torch.Generator(device="cpu").manual_seed(0)
                made = time.perf_counter()
                inputs = loaded.subject.inputs(case, generator)
                inputs_s = time.perf_counter() - made
                for name in IMPLEMENTATIONS:
                    row = _one(loaded, suite, case, name, inputs, seen)
                    row.update(inputs_s=f"{inputs_s:.2f}")
                    lines.append("\t".join(str(row.get(column, "")) for column in COLUMNS))
                    print(lines[-1], flush=True)
                del inputs
    total = time.perf_counter() - started
    header = [
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}, {os.cpu_count()} CPUs, "
        f"torch {torch.__version__}, triton {triton.__version__}, compiled for {gpu.name} (sm_"
        f"{gpu.capability[0]}{gpu.capability[1]}) without one; {total:.0f} s in all",
        f"# command: env -u TRITON_INTERPRET PYTHONPATH=. python {' '.join(sys.argv)}",
    ]
    args.out.write_text("\n".join([*header, *lines]) + "\n")


def _one(loaded, suite, case, name: str, inputs, seen: set) -> dict:
    impl = loaded.implementations[name]
    row = {
        "suite": suite.name,
        "case": case.name,
        "dtype": case.dtype,
        **{k: case.params[k] for k in "MKN"},
        "implementation": name,
        "listed": "yes" if name in suite.implementations else "no",
    }
    try:
        plan = impl.config(*inputs) if impl.config else {}
        row.update(path=plan.get("path", ""), source=plan.get("source", ""))
        start = time.perf_counter()
        with launches.recording() as launched:
            impl.fn(*inputs)
        row["seconds"] = f"{time.perf_counter() - start:.2f}"
    except Exception as error:  # noqa: BLE001 -- the row says what stopped it
        text = " ".join(str(error).split())
        return {**row, "result": f"failed: {type(error).__name__}: {text[:200]}"}
    compiled = artifacts.compiled(launched)
    if compiled.unrecorded or not compiled.kernels:
        return {**row, "result": f"no kernel recorded: {compiled.unrecorded}"}
    (kernel,) = compiled.kernels
    new = kernel.cubin_sha256 not in seen
    seen.add(kernel.cubin_sha256)
    occupancy = kernel.occupancy
    return {
        **row,
        "result": "compiled",
        "new": "yes" if new else "no",
        "kernel": kernel.name,
        "grid": "x".join(map(str, kernel.grid)),
        "warps": kernel.num_warps,
        "stages": kernel.num_stages,
        "registers": kernel.registers,
        "spill_store_B": kernel.spill_store_bytes,
        "spill_load_B": kernel.spill_load_bytes,
        "static_shared_B": kernel.static_shared_bytes,
        "dynamic_shared_B": kernel.dynamic_shared_bytes,
        "blocks_per_sm": occupancy.blocks_per_sm if occupancy else "",
        "limited_by": occupancy.limited_by if occupancy else "",
        "mma": kernel.instructions["mma"],
        "tma": kernel.instructions["tma"],
        "async_copy": kernel.instructions["async_copy"],
    }


if __name__ == "__main__":
    main()
