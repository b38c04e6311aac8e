"""Do two loads of the same kernels time alike? In every full-width A/A (aa3, aa4, sbs1, sbs2),
fused on models/t5-v1.1-xl ran 0.3-0.6% faster on the head side than on the base, block after
block, though both sides load identical code (the base from a worktree copy) and share inputs.
Here three copies of kernels/ are loaded in order (one, two, three), and their benchmarks are
timed interleaved (perfbot's engine, every side spread over the round), captured again before
each block of four rounds, as a sequential A/B does. If the first load is the odd one out,
two/one and three/one move together and three/two stays at 1.

    PYTHONPATH=. python experiments/2026-12-01-h200-side-by-side/probe_loads.py > probe_loads.txt
"""

import dataclasses
import random
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch

from perfbot import measure, runner
from perfbot.subject import load_subject

ROOT = Path.cwd()  # the repository root
CASES = [("models", "t5-v1.1-xl"), ("models", "gemma-7b"), ("a100", "d4096")]
BLOCKS, ROUNDS = 40, 4
copies = Path(tempfile.mkdtemp())
loads = {}
for side in ("one", "two", "three"):
    shutil.copytree(ROOT / "kernels", copies / side / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
    loads[side] = load_subject(copies / side / "kernels")
settings = runner.RunSettings(samples=10, kernels=("fused", "fused-pointer", "gemm"))
print(f"{torch.cuda.get_device_name()}; {BLOCKS} blocks of {ROUNDS} rounds, fresh captures before each")
for suite_name, case_name in CASES:
    suite = loads["one"].suites[suite_name]
    case = next(c for c in suite.cases if c.name == case_name)
    sides = runner.LocalSides(loads, settings)
    keys, failed = sides.prepare(dataclasses.replace(suite, cases=(case,)))
    assert not failed, failed
    timer, rng = sides.timer(), random.Random(0)
    samples = {key: [] for key in keys}
    for block in range(BLOCKS):
        if block:
            sides.recapture(keys)
        for key, values in measure.time_rounds(timer, keys, ROUNDS, start=block * ROUNDS).samples.items():
            samples[key] += values
    for name in sorted({key.split(":", 1)[1] for key in keys}):
        of = {side: np.asarray(samples[f"{side}:{name}"]) for side in loads}
        line = []
        for a, b in (("two", "one"), ("three", "one"), ("three", "two")):
            ratio = of[a] / of[b]
            blocks = np.median(ratio.reshape(BLOCKS, ROUNDS), axis=1)
            above = np.mean(blocks > 1)
            line.append(f"{a}/{b} {np.median(blocks):.4f} (blocks above 1: {above:.0%})")
        print(f"{suite_name}/{case_name} {name:14s} {np.median(of['one']):.4f} ms: " + "; ".join(line))
    sides.finish({key: [1.0] for key in keys}, [])
