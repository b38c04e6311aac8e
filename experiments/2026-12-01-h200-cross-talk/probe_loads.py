"""Is fused-pointer on quick/odd's side bias a property of where each side's kernels were loaded?

The full-width reproducer (runs/f1) failed fused-pointer on quick/odd at +0.74% (confirmed,
+1.05%) with the sides' places drawn, while ten quick-suite reproducers all put it at -0.2% to
-1.0% (runs/q1). Each load of a kernels/ copy imports its own modules, whose kernels Triton loads
into GPU memory of their own. Here LOADS A/As of quick/odd are timed, each between two fresh
copies of kernels/ (so two fresh loads), as `perfbot ab` times a case (drawn places, fresh
captures every block of four rounds): if the copies' placement biases a side for as long as it is
loaded, the A/As' estimates scatter by more than their intervals allow.

    python experiments/2026-12-01-h200-cross-talk/probe_loads.py KERNELS LOADS BLOCKS
"""

import dataclasses
import shutil
import sys
import tempfile
from pathlib import Path

from perfbot import measure, runner, sequential
from perfbot.compare import BLOCK_ROUNDS, judge_paired
from perfbot.subject import load_subject
from perfbot.thresholds import Rule

kernels, loads, blocks = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
copies = Path(tempfile.mkdtemp())
rule = Rule(fail_percent=0.5, warn_percent=0.25, alpha=0.01, min_samples=10)
print(f"quick/odd: {loads} A/As, each of two fresh loads of {kernels}, {blocks} blocks of {BLOCK_ROUNDS} rounds")
for load in range(loads):
    subjects = {}
    for side in ("base", "head"):
        shutil.copytree(kernels, copies / f"{side}{load}" / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
        subjects[side] = load_subject(copies / f"{side}{load}" / "kernels")
    suite = subjects["base"].suites["quick"]
    case = dataclasses.replace(suite, cases=tuple(c for c in suite.cases if c.name == "odd"))
    sides = runner.LocalSides(subjects, runner.RunSettings(seed=load))
    keys, failed = sides.prepare(case)
    assert not failed, failed
    pairs = sequential.pairs_of(keys)
    timer = sides.timer()
    samples: dict[str, list[float]] = {key: [] for key in keys}
    for block in range(blocks):
        if block:
            sides.recapture(keys)
        start = block * BLOCK_ROUNDS
        timed = measure.time_rounds(timer, keys, BLOCK_ROUNDS, start=start, pairs=list(pairs.values()), seed=load)
        for key, values in timed.samples.items():
            samples[key] += values
    line = []
    for name, (base, head) in pairs.items():
        estimate = judge_paired(samples[base], samples[head], rule, BLOCK_ROUNDS)["estimate"]
        line.append(f"{name} {100 * (estimate.ratio - 1):+.2f}% [{estimate.low:.4f}, {estimate.high:.4f}]")
    print(f"  A/A {load}: " + "; ".join(line), flush=True)
    sides.finish({key: [1.0] for key in keys}, [])
