"""How large a step `perfbot history --check` finds, how soon, and how often it reports a step
that is not there, on runs generated with the noise measured between separate H200 runs
(tests/history_store.py, experiments/2026-11-30-history-noise/noise.json). From the repository root:

    PYTHONPATH=. python experiments/2026-11-30-history-detection/power.py \
        > experiments/2026-11-30-history-detection/power.txt

Each trial is a history of 40 runs of two cases (fused, gemm and eager on each), built in memory
and read by perfbot's own code (history.of_runs, steps.new_steps): the fused kernel's two series
are what a check watches.
- Found: a store with a step of the given size at run 25 (1-based) is checked once, whole; the
  step counts as found if a slower step is reported within two runs of 25.
- Delay: the store grows run by run, checked after each run as the baseline job does (the state
  of reported steps carried along); the delay is how many runs after run 25 the check first
  reports it (within two runs of its place), or never.
- False alarms: stores without a step, checked after every run from the 8th; every step reported
  in the fused kernel's two series is false. Counted per 100 checks of one such benchmark.
"""

from __future__ import annotations

import statistics
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from perfbot import history, steps
from tests.history_store import make_runs

RUNS, AT, TRIALS = 40, 24, 200  # AT is 0-based: run 25


def _history(runs):
    return history.of_runs([(Path(f"run-{i}.json"), f"{i:04d}", run) for i, run in enumerate(runs)])


def _found(found: list[steps.Found]) -> bool:
    return any(f.slower and abs(f.after.index - AT) <= 2 for f in found)


def incremental(runs, start: int = 8) -> tuple[int | None, int]:
    """(runs after the step when first reported near its place, or None; steps reported falsely)."""
    state, first, false = steps.State(), None, 0
    for end in range(start, len(runs) + 1):
        new = steps.new_steps(_history(runs[:end]), state)
        state = steps.State(reported=[*state.reported, *(f.reported() for f in new)])
        for f in new:
            if f.slower and abs(f.after.index - AT) <= 2 and first is None and end - 1 >= AT:
                first = end - 1 - AT
            elif not (abs(f.after.index - AT) <= 2):
                false += 1
    return first, false


def _step_trial(args: tuple[float, int]) -> tuple[bool, int | None]:
    size, trial = args
    runs = make_runs(RUNS, step=size, at=AT, seed=1000 + trial)
    return _found(steps.new_steps(_history(runs), steps.State())), incremental(runs)[0]


def _null_trial(trial: int) -> tuple[bool, int, int]:
    """(the whole store reports a step, steps reported checking after every run, checks made)."""
    runs = make_runs(RUNS, seed=5000 + trial)
    whole = bool(steps.new_steps(_history(runs), steps.State()))
    state, false, checks = steps.State(), 0, 0
    for end in range(8, RUNS + 1):
        new = steps.new_steps(_history(runs[:end]), state)
        state = steps.State(reported=[*state.reported, *(f.reported() for f in new)])
        false += sum(f.series.under_test for f in new)  # the watched series: the fused kernel's two
        checks += 2
    return whole, false, checks


def main() -> None:
    print(f"{TRIALS} trials per row; {RUNS} runs, two watched benchmarks per store; step at run {AT + 1}")
    print("step | found within 2 runs, whole store | delay: median, 90th pct (runs after the step) | never found")
    with ProcessPoolExecutor() as pool:
        for size in (0.01, 0.015, 0.02, 0.03, 0.05):
            outcomes = list(pool.map(_step_trial, [(size, trial) for trial in range(TRIALS)]))
            found_whole = sum(found for found, _ in outcomes)
            delays = [delay for _, delay in outcomes]
            known = sorted(d for d in delays if d is not None)
            never = sum(d is None for d in delays)
            p90 = known[int(0.9 * len(known))] if known else None
            print(
                f"{100 * size:4.1f}% | {100 * found_whole / TRIALS:5.1f}% | "
                f"{statistics.median(known) if known else '-'}, {p90} | {100 * never / TRIALS:.1f}%",
                flush=True,
            )
        nulls = list(pool.map(_null_trial, range(TRIALS)))
    stores_with_any = sum(whole for whole, _, _ in nulls)
    false, checks = sum(n[1] for n in nulls), sum(n[2] for n in nulls)
    print(
        f"no step: {100 * stores_with_any / TRIALS:.1f}% of whole stores report a step; "
        f"{100 * false / checks:.2f} false steps per 100 checks of one benchmark (checked after every run)"
    )


if __name__ == "__main__":
    main()
