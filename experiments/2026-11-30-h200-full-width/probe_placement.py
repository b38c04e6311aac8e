"""Where does an A/A's spread come from on short kernels: the rounds, or the capture? Two sides
loaded from the same kernels, each benchmark captured once per side; blocks of ten interleaved
rounds (perfbot's engine), timed three ways: the same captures throughout ("fixed"), fresh
captures before every block at a random offset ("offset", what a sequential A/B does), fresh
captures at offset 0 ("fresh"). Per way: the spread (standard deviation, %) of the per-round
ratio head/base within blocks, and of the blocks' median ratios across blocks.

    PYTHONPATH=. python experiments/2026-11-30-h200-full-width/probe_placement.py > probe_placement.txt
"""

import dataclasses
import random
from pathlib import Path

import numpy as np
import torch

from perfbot import measure, runner
from perfbot.subject import load_subject

ROOT = Path.cwd()  # the repository root
CASES = [("generated", "gemma-2-9b-m1"), ("generated", "llama-3.2-3b-m3"), ("a100", "d512"), ("pr", "square-4k")]
BLOCKS = 60
loaded = load_subject(ROOT / "kernels")
settings = runner.RunSettings(samples=10, kernels=("fused", "gemm", "copy"))
print(f"{torch.cuda.get_device_name()}; {BLOCKS} blocks of 10 rounds per way")
for suite_name, case_name in CASES:
    suite = loaded.suites[suite_name]
    case = next(c for c in suite.cases if c.name == case_name)
    sides = runner.LocalSides({"base": loaded, "head": loaded}, settings)
    keys, failed = sides.prepare(dataclasses.replace(suite, cases=(case,)))
    assert not failed, failed
    names = sorted({key.split(":", 1)[1] for key in keys})
    for way in ("fixed", "offset", "fresh"):
        timer = sides.timer()
        blocks: dict[str, list[np.ndarray]] = {name: [] for name in names}
        rng = random.Random(0)
        for block in range(BLOCKS):
            if block and way != "fixed":
                for key in keys:
                    offset = measure.random_offset(rng) if way == "offset" else 0
                    ready = next(r for r in sides.ready if r.planned.key == key)
                    sides.captured[key] = measure.capture(ready.call, 1, offset)
            timed = measure.time_rounds(timer, keys, 10, start=block * 10).samples
            for name in names:
                blocks[name].append(np.asarray(timed[f"head:{name}"]) / np.asarray(timed[f"base:{name}"]))
        for name in names:
            ratios = np.array(blocks[name])
            within = 100 * np.median(np.std(ratios, axis=1))
            across = 100 * np.std(np.median(ratios, axis=1))
            print(
                f"{suite_name}/{case_name} {name:6s} {way:6s}: per-round spread {within:.2f}%, "
                f"block-median spread {across:.2f}%, median ratio {np.median(ratios):.4f}"
            )
    sides.finish({key: [1.0] for key in keys}, [])
