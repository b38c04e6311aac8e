"""How large and how slow the history site and check are on a store of 1000 runs of 102
benchmarks (34 cases × fused, gemm and eager; 30 samples each), generated with the measured
noise. From the repository root:

    PYTHONPATH=. python experiments/2026-11-30-history-detection/scale.py \
        > experiments/2026-11-30-history-detection/scale.txt

The store is written with perfbot's own store.add, then `perfbot history --check --html` runs
on it as the baseline job runs it, and is timed whole (reading and validating every file too).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from perfbot import store
from tests.history_store import make_runs

RUNS, CASE_COPIES = 1000, 17  # 2 cases × 17 copies × 3 implementations = 102 benchmarks


def main() -> None:
    with tempfile.TemporaryDirectory() as work:
        directory = Path(work) / "store"
        started = time.perf_counter()
        for run in make_runs(RUNS, seed=7):
            benchmarks = [
                replace(b, case=f"{b.case}-{copy}", shape={**b.shape, "M": b.shape["M"] + 16 * copy})
                for copy in range(CASE_COPIES)
                for b in run.benchmarks
            ]
            store.add(directory, replace(run, benchmarks=benchmarks))
        stored = time.perf_counter() - started
        size = sum(p.stat().st_size for p in directory.rglob("*.json"))
        site = Path(work) / "site"
        started = time.perf_counter()
        done = subprocess.run(
            [
                str(Path(sys.executable).parent / "perfbot"),
                "history",
                "--store",
                str(directory),
                "--check",
                "--html",
                str(site),
            ],
            capture_output=True,
            text=True,
        )
        took = time.perf_counter() - started
        pages = sorted(site.rglob("*.html"), key=lambda p: p.stat().st_size)
        print(f"store: {RUNS} runs of {len(benchmarks)} benchmarks, {size / 1e6:.1f} MB, written in {stored:.0f} s")
        print(f"perfbot history --check --html: exit {done.returncode}, {took:.1f} s")
        print(f"  {done.stdout.strip().splitlines()[-1]}")
        print(f"site: {len(pages)} pages, {sum(p.stat().st_size for p in pages) / 1e6:.1f} MB in all")
        print(f"  index.html {(site / 'index.html').stat().st_size / 1e3:.0f} kB")
        print(f"  largest benchmark page {pages[-1].stat().st_size / 1e3:.0f} kB ({pages[-1].name})")


if __name__ == "__main__":
    main()
