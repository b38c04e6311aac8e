"""Issue 30's targets for `perfbot history --check`: whose step it is, on runs generated with the
noise measured between separate H200 runs (tests/history_store.py). From the repository root:

    PYTHONPATH=. python experiments/2026-12-01-history-attribution/attribution.py \
        > experiments/2026-12-01-history-attribution/attribution.txt

Each trial is a history of 40 runs of two cases (fused, gemm and eager on each), built in memory
and read by perfbot's own code (history.of_runs, steps.new_steps), checked two ways:
- whole: the store checked once, all 40 runs;
- every run: the store grown run by run and checked after each from the 8th, the state of
  reported steps carried along, as the baseline job on main does.
Scenarios, 200 stores each (seeds differ from docs/history.md's power.py):
- reference: from run 25 torch 2.11.0 → 2.12.0 and gemm on the decode case 3% faster; fused flat.
  Target: no failing report (fails: exit 1) in any check.
- subject: from run 25 torch 2.11.0 → 2.12.0 and fused 2% slower on both cases. Target: a failing
  report that names the environment change.
- library: as reference, but eager got 3% faster with gemm (on GeGLU every baseline but copy
  calls cuBLAS, so a faster cuBLAS moves them all): the raw medians alone must tell. Target: as
  reference.
- both: the two at once (fused 2% slower on both cases, gemm 3% faster on the decode case): the
  slowdown must still fail, on the decode case too.
- the detection figures of docs/history.md again, counting a step as found only when it fails
  the check (power.py counted any slower step), and the false steps without a step.
"""

from __future__ import annotations

import statistics
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

from perfbot import history, steps
from tests.history_store import make_runs

RUNS, AT, TRIALS = 40, 24, 200  # AT is 0-based: run 25
ENVIRONMENT = "torch 2.11.0 → 2.12.0"


def _history(runs):
    return history.of_runs([(Path(f"run-{i}.json"), f"{i:04d}", run) for i, run in enumerate(runs)])


def _checks(runs, start: int = 8):
    """The new steps of each check made after every run from `start`, as the baseline job does."""
    state = steps.State()
    for end in range(start, len(runs) + 1):
        new = steps.new_steps(_history(runs[:end]), state)
        state = steps.State(reported=[*state.reported, *(f.reported() for f in new)])
        yield end, new


def _names_environment(found: steps.Found) -> bool:
    return any(change == ENVIRONMENT for _, change in found.environment)


def _reference_trial(trial: int) -> tuple[int, int, int]:
    """(failing steps whole, failing steps over every check, reference steps named whole)."""
    runs = make_runs(RUNS, at=AT, seed=7000 + trial, reference_step=-0.03, environment_changes=True)
    whole = steps.new_steps(_history(runs), steps.State())
    failing_every = sum(f.fails for _, new in _checks(runs) for f in new)
    named = sum(f.attribution is not None and f.attribution.cause == "reference" for f in whole)
    return sum(f.fails for f in whole), failing_every, named


def _library_trial(trial: int) -> tuple[int, int]:
    """(failing steps whole, failing steps over every check) where eager moved with gemm."""
    runs = make_runs(RUNS, at=AT, seed=7000 + trial, reference_step=-0.03, environment_changes=True)
    runs = [
        replace(
            run,
            benchmarks=[
                replace(b, samples_ms=[v * 0.97 for v in b.samples_ms])
                if b.kernel == "eager" and b.case == "gemma-7b-m16" and index >= AT
                else b
                for b in run.benchmarks
            ],
        )
        for index, run in enumerate(runs)
    ]
    whole = steps.new_steps(_history(runs), steps.State())
    every = [sum(f.fails for f in new) for _, new in _checks(runs)]
    return sum(f.fails for f in whole), sum(every)


def _subject_trial(trial: int) -> tuple[bool, bool, int | None]:
    """(whole: a failing step near 25 naming the change; any failing at all; delay over every check)."""
    runs = make_runs(RUNS, step=0.02, at=AT, seed=8000 + trial, environment_changes=True)
    whole = steps.new_steps(_history(runs), steps.State())
    named = any(f.fails and abs(f.after.index - AT) <= 2 and _names_environment(f) for f in whole)
    delay = next(
        (end - 1 - AT for end, new in _checks(runs) if any(f.fails and _names_environment(f) for f in new)), None
    )
    return named, any(f.fails for f in whole), delay


def _both_trial(trial: int) -> tuple[bool, bool]:
    """(whole: the decode case's fused fails; the other case's fails)."""
    runs = make_runs(RUNS, step=0.02, at=AT, seed=9000 + trial, reference_step=-0.03, environment_changes=True)
    whole = steps.new_steps(_history(runs), steps.State())
    cases = {f.series.bench.case for f in whole if f.fails and abs(f.after.index - AT) <= 2}
    return "gemma-7b-m16" in cases, "t5-v1.1-xl" in cases


def _step_trial(args: tuple[float, int]) -> tuple[bool, int | None]:
    size, trial = args
    runs = make_runs(RUNS, step=size, at=AT, seed=1000 + trial)
    found = any(f.fails and abs(f.after.index - AT) <= 2 for f in steps.new_steps(_history(runs), steps.State()))
    delay = next(
        (end - 1 - AT for end, new in _checks(runs) if any(f.fails and abs(f.after.index - AT) <= 2 for f in new)),
        None,
    )
    return found, delay


def _null_trial(trial: int) -> tuple[bool, int, int, int]:
    """(the whole store reports a step; the fused series' steps, and failing steps, over every check; checks)."""
    runs = make_runs(RUNS, seed=5000 + trial)
    whole = bool(steps.new_steps(_history(runs), steps.State()))
    reported = failing = checks = 0
    for _, new in _checks(runs):
        reported += sum(f.series.under_test for f in new)
        failing += sum(f.fails for f in new)
        checks += 2  # the watched series: the fused kernel's two
    return whole, reported, failing, checks


def _delays(delays: list[int | None]) -> str:
    known = sorted(d for d in delays if d is not None)
    if not known:
        return "never"
    return f"{statistics.median(known)}, {known[int(0.9 * len(known))]}; never {100 * (len(delays) - len(known)) / len(delays):.1f}%"


def main() -> None:
    print(f"{TRIALS} stores per row; {RUNS} runs of two cases (fused, gemm, eager); the change from run {AT + 1}")
    with ProcessPoolExecutor() as pool:
        outcomes = list(pool.map(_reference_trial, range(TRIALS)))
        print(
            f"reference 3% faster, fused flat: failing steps, whole store: {sum(o[0] for o in outcomes)} in {TRIALS} "
            f"stores; checked after every run: {sum(o[1] for o in outcomes)}, in {sum(o[1] > 0 for o in outcomes)} "
            f"stores; stores whose whole check names "
            f"the reference as the cause: {sum(o[2] > 0 for o in outcomes)}",
            flush=True,
        )
        outcomes = list(pool.map(_library_trial, range(TRIALS)))
        print(
            f"the same with eager 3% faster too: failing steps, whole store: {sum(o[0] for o in outcomes)}; checked "
            f"after every run: {sum(o[1] for o in outcomes)}, in {sum(o[1] > 0 for o in outcomes)} stores",
            flush=True,
        )
        outcomes = list(pool.map(_subject_trial, range(TRIALS)))
        print(
            f"fused 2% slower at the change: whole store fails naming the change, within two runs of "
            f"{AT + 1}: {sum(o[0] for o in outcomes)}/{TRIALS}; fails at all: {sum(o[1] for o in outcomes)}/{TRIALS}; "
            f"checked after every run, runs after the step until it fails naming the change (median, 90th pct): "
            f"{_delays([o[2] for o in outcomes])}",
            flush=True,
        )
        outcomes = list(pool.map(_both_trial, range(TRIALS)))
        print(
            f"fused 2% slower and gemm 3% faster on the decode case at the change: whole store fails within two "
            f"runs of {AT + 1} on the decode case {sum(o[0] for o in outcomes)}/{TRIALS}, on the other "
            f"{sum(o[1] for o in outcomes)}/{TRIALS}",
            flush=True,
        )
        print("step | fails within 2 runs, whole store | delay until it fails: median, 90th pct; never")
        for size in (0.01, 0.015, 0.02, 0.03, 0.05):
            outcomes = list(pool.map(_step_trial, [(size, trial) for trial in range(TRIALS)]))
            print(
                f"{100 * size:4.1f}% | {100 * sum(o[0] for o in outcomes) / TRIALS:5.1f}% | "
                f"{_delays([o[1] for o in outcomes])}",
                flush=True,
            )
        nulls = list(pool.map(_null_trial, range(TRIALS)))
    checks = sum(n[3] for n in nulls)
    print(
        f"no step: {100 * sum(n[0] for n in nulls) / TRIALS:.1f}% of whole stores report a step; checked after "
        f"every run, {100 * sum(n[1] for n in nulls) / checks:.2f} steps reported per 100 checks of one watched "
        f"benchmark, {100 * sum(n[2] for n in nulls) / checks:.2f} failing"
    )


if __name__ == "__main__":
    main()
