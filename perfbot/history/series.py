"""A baseline store read as history: every stored run of each GPU in the order it was stored,
one series per benchmark, the environment changes between runs, and the steps in each series.

A subject's own benchmark has two series a check could watch: its median, and its median over a
reference measured in the same run (its first bound on the case, else its first baseline), in
which whatever moved the whole run (a slower machine, a warmer day) cancels. Each series is
watched by whichever of the two varies less from run to run in the store: between separate
runs that is usually the ratio (docs/history.md, "What the check watches, and how it finds a
step"). A benchmark without
a reference is watched by its median. Whose a step is, the subject's own or its reference's, is
told by both raw medians (perfbot/history/attribution.py).

A step a user acknowledged (`perfbot history ack`, perfbot/history/acknowledgements.py) is a known break
in its series: the steps are searched for on each side of it apart.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..deciding import changepoints, stats
from ..deciding.comparison import shape_text
from ..records import store
from ..records.autotune import config_text
from ..records.run import Benchmark, Results, variant_name
from . import acknowledgements
from .acknowledgements import Acknowledgement

# What can change a kernel's time without its code changing; a run whose values differ from the
# run before is flagged on the charts.
ENVIRONMENT_FIELDS = ("driver", "cuda", "torch", "triton", "triton_commit")
_SHA = re.compile(r"[0-9a-f]{7,40}")


@dataclass(frozen=True)
class Run:
    index: int  # its place among its GPU's runs, oldest first
    path: Path
    stored: str  # when it entered the store (UTC), from its file name
    results: Results
    changed: tuple[str, ...]  # "torch 2.10.0 → 2.11.0", against the run before

    @property
    def commit(self) -> str | None:
        """The commit its kernels were measured at, when the run says (and it is a commit id)."""
        commit = self.results.environment.kernels_commit
        return commit if isinstance(commit, str) and _SHA.fullmatch(commit) else None

    @property
    def triton_commit(self) -> str | None:
        commit = self.results.environment.triton_commit
        return commit if isinstance(commit, str) and _SHA.fullmatch(commit) else None


@dataclass(frozen=True)
class Point:
    run: int
    median_ms: float
    low_ms: float  # the 95% interval of the median
    high_ms: float
    ratio: float | None  # the median over the reference's in the same run
    ratios: tuple[tuple[str, float], ...] = ()  # the median over each other implementation's, same run
    # The configs its autotuned kernels ran, in words, and what names its code: the digests of the
    # files its implementation came from, else of its autotuned kernels' source and configs.
    picks: tuple[str, ...] = ()
    code: tuple[str, ...] = ()

    @property
    def reference_ms(self) -> float | None:
        return self.median_ms / self.ratio if self.ratio is not None else None


@dataclass(frozen=True)
class Series:
    gpu: str
    bench: Benchmark  # the newest run's benchmark: names the series
    under_test: bool
    reference: str | None  # the implementation its ratio is over
    points: tuple[Point, ...]
    # The steps acknowledged in it: (the run that starts the step, the record), oldest first.
    acknowledged: tuple[tuple[int, Acknowledgement], ...] = ()
    # The case's other implementations that are neither under test nor the reference: what tells
    # the reference's own move apart from the subject's (perfbot/history/attribution.py).
    witnesses: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        b = self.bench
        return f"{variant_name(b.kernel, b.variant, b.mode)} · {b.suite}/{b.case} · {shape_text(b.shape)} {b.dtype}"

    @property
    def identity(self) -> str:
        """A short digest of the GPU and the benchmark's key: names the series in the state file
        and its page, whatever the length or spelling of its names."""
        return hashlib.sha256(repr((self.gpu, self.bench.key)).encode()).hexdigest()[:16]

    @property
    def slug(self) -> str:
        """A file name for the series' page, unique within a store (two labels that differ only
        in case or punctuation differ in the digest)."""
        readable = re.sub(r"[^a-z0-9]+", "-", f"{self.gpu} {self.label}".lower()).strip("-")[:120]
        return f"{readable}-{self.identity[:8]}"

    @functools.cached_property
    def watches_ratio(self) -> bool:
        """Whether the check watches the ratio over the reference rather than the median: the one
        with less run-to-run noise over the runs that have both (the ratio on a tie), given
        enough runs with a ratio to find a step in."""
        both = [p for p in self.points if p.ratio is not None]
        if self.reference is None or len(both) < 2 * changepoints.MIN_SEGMENT:
            return False
        ratios = [p.ratio for p in both if p.ratio is not None]
        return changepoints.noise(ratios) <= changepoints.noise([p.median_ms for p in both])

    @property
    def watched(self) -> list[tuple[int, float]]:
        """(run, value) of what the check watches: the ratio or the median (watches_ratio)."""
        if self.watches_ratio:
            return [(p.run, p.ratio) for p in self.points if p.ratio is not None]
        return [(p.run, p.median_ms) for p in self.points]

    @property
    def watched_label(self) -> str:
        """What the check watches, for people: "mykernel/bound", or "median"."""
        return f"{self.bench.kernel}/{self.reference}" if self.watches_ratio else "median"

    @property
    def watched_why(self) -> str:
        """Why that series: the run-to-run noise of both, for the report."""
        both = [p for p in self.points if p.ratio is not None]
        if self.reference is None or len(both) < 2 * changepoints.MIN_SEGMENT:
            noise = changepoints.noise([p.median_ms for p in self.points])
            why = "nothing to divide it by" if self.reference is None else "too few runs with a ratio"
            return f"the median ({why}; run-to-run noise {100 * noise:.2f}%)"
        ratio = changepoints.noise([p.ratio for p in both if p.ratio is not None])
        median = changepoints.noise([p.median_ms for p in both])
        noises = f"run-to-run noise over {self.reference} {100 * ratio:.2f}%, median {100 * median:.2f}%"
        return f"{'the ratio' if self.watches_ratio else 'the median'}, the quieter ({noises})"

    @functools.cached_property
    def steps(self) -> list[tuple[changepoints.Step, int, int]]:
        """Each step with the run before it and the run that starts it (found once: the site and
        the check both ask)."""
        watched = self.watched
        return [
            (step, watched[step.at - 1][0], watched[step.at][0])
            for step in changepoints.find([value for _, value in watched], self.breaks)
        ]

    @property
    def breaks(self) -> list[int]:
        """Where in `watched` each acknowledged step starts: at its run, or the first watched after it."""
        runs = [run for run, _ in self.watched]
        return [next((i for i, run in enumerate(runs) if run >= at), len(runs)) for at, _ in self.acknowledged]


@dataclass(frozen=True)
class History:
    runs: dict[str, list[Run]]  # GPU name -> its runs, oldest first
    series: list[Series]
    acknowledged: tuple[Acknowledgement, ...] = ()  # every record of the store's file, as read


def read(store_dir: Path) -> History:
    """Every run in the store, every benchmark's series, and the steps acknowledged in them
    (store.py and acknowledgements.py validate each file)."""
    runs = [(entry.path, entry.stored, results) for entry, results in store.runs(store_dir)]
    return of_runs(runs, acknowledgements.load(store_dir))


def of_runs(stored: Sequence[tuple[Path, str, Results]], acknowledged: Sequence[Acknowledgement] = ()) -> History:
    """The history of runs given oldest first as (file, when stored, results), with the steps
    acknowledged in it."""
    by_gpu: dict[str, list[Run]] = {}
    for path, stamp, results in stored:
        runs = by_gpu.setdefault(str(results.environment.gpu_name), [])
        previous = runs[-1].results if runs else None
        runs.append(Run(len(runs), path, stamp, results, _changes(previous, results)))
    series = [s for gpu, runs in by_gpu.items() for s in _series(gpu, runs)]
    return History(by_gpu, [_with_acknowledged(s, by_gpu[s.gpu], acknowledged) for s in series], tuple(acknowledged))


def _with_acknowledged(series: Series, runs: Sequence[Run], acknowledged: Sequence[Acknowledgement]) -> Series:
    """The series with its acknowledged steps; one whose run is no longer in the store is left out."""
    mine = [a for a in acknowledged if (a.gpu, a.series) == (series.gpu, series.identity)]
    if not mine:
        return series
    index = {run.stored: run.index for run in runs}
    found = sorted(((index[a.stored], a) for a in mine if a.stored in index), key=lambda pair: pair[0])
    return replace(series, acknowledged=tuple(found)) if found else series


def _changes(previous: Results | None, current: Results) -> tuple[str, ...]:
    if previous is None:
        return ()
    changed = []
    for name in ENVIRONMENT_FIELDS:
        before, after = getattr(previous.environment, name), getattr(current.environment, name)
        if before != after:
            changed.append(f"{name} {before} → {after}")
    if previous.settings.timing != current.settings.timing:
        changed.append(f"timing method: {current.settings.timing}")
    return tuple(changed)


def _series(gpu: str, runs: Sequence[Run]) -> list[Series]:
    points: dict[tuple, list[Point]] = {}
    newest: dict[tuple, tuple[Benchmark, Results]] = {}
    for run in runs:
        for bench in run.results.benchmarks:
            newest[bench.key] = (bench, run.results)
    references = {key: _reference(results, bench) for key, (bench, results) in newest.items()}
    for run in runs:
        for bench in run.results.benchmarks:
            reference_name = references[bench.key]
            reference = run.results.peer(bench, reference_name) if reference_name else None
            low, high = stats.median_interval(bench.samples_ms)
            ratio = bench.median_ms / reference.median_ms if reference is not None else None
            ratios = _ratios(run.results, bench) if reference_name else ()
            picks, code = _tuning(run.results, bench)
            point = Point(run.index, bench.median_ms, low, high, ratio, ratios, picks, code)
            points.setdefault(bench.key, []).append(point)
    return [
        Series(
            gpu,
            bench,
            bench.kernel in results.settings.under_test,
            references[key],
            tuple(points[key]),
            witnesses=_witnesses(results, bench, references[key]),
        )
        for key, (bench, results) in newest.items()
    ]


def _witnesses(results: Results, bench: Benchmark, reference: str | None) -> tuple[str, ...]:
    """The case's implementations that are neither under test (a change to shared code moves them
    with the subject) nor the reference; none for a benchmark that is not the subject's own."""
    own = results.settings.under_test
    if bench.kernel not in own or reference is None:
        return ()
    present = dict.fromkeys(b.kernel for b in results.benchmarks if results.peer(bench, b.kernel) is not None)
    return tuple(k for k in present if k not in own and k != reference)


def _ratios(results: Results, bench: Benchmark) -> tuple[tuple[str, float], ...]:
    """The subject's median over every other implementation's on the same case in the same run."""
    others = dict.fromkeys(b.kernel for b in results.benchmarks if b.kernel != bench.kernel)
    found = []
    for kernel in others:
        peer = results.peer(bench, kernel)
        if peer is not None:
            found.append((kernel, bench.median_ms / peer.median_ms))
    return tuple(found)


def _reference(results: Results, bench: Benchmark) -> str | None:
    """What the subject's own benchmark is watched against: its first bound on the case, else its
    first baseline. None for the others (a baseline is watched by its median)."""
    own = results.settings.under_test
    if bench.kernel not in own:
        return None
    present = [b.kernel for b in results.benchmarks if results.peer(bench, b.kernel) is not None]
    candidates = [k for k in results.settings.bounds if k in present]
    candidates += [k for k in dict.fromkeys(present) if k not in own and k not in results.settings.bounds]
    return candidates[0] if candidates else None


def _tuning(results: Results, bench: Benchmark) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A run's autotune picks of a benchmark, in words, and its code's digests (Point)."""
    chosen = [p for p in bench.autotune if p.origin != "only config"]
    picks = tuple(sorted({f"{p.kernel} (key {', '.join(p.key)}): {config_text(p.config)}" for p in chosen}))
    files = results.settings.sources.get(bench.kernel, {})
    code = tuple(sorted(files.values())) or tuple(
        sorted({f"{p.kernel} {p.source_sha256} {p.configs_sha256}" for p in chosen})
    )
    return picks, code
