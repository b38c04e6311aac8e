"""The sides of an interleaved A/B differ only in the code under test (DESIGN.md, "Invariants of a
verdict"): a fake GPU whose timings depend on a benchmark's neighbour in the round, or on the
order its captures were made in, must leave the verdicts of the unchanged benchmarks unbiased.
Only the GPU's primitives are replaced (tests/fake_gpu.py); the A/B runs as `perfbot ab` runs it."""

import json
import os
import random
from contextlib import contextmanager
from pathlib import Path

import pytest

from perfbot.measuring import loads, measure, runner
from perfbot.measuring.planning import RunSettings, single_cases
from tests import test_runner_cpu
from tests.fake_gpu import listed_places
from tests.test_runner_cpu import _ab

repo = test_runner_cpu.repo  # the fixture: the tiny suite's project, committed twice (base, head)

OTHERS = ("eager", "gemm", "copy")


def _rows(out: Path) -> dict[tuple[str, str], dict]:
    comparison = json.loads((out / "comparison.json").read_text())
    return {(row["benchmark"]["case"], row["benchmark"]["kernel"]): row for row in comparison["comparisons"]}


def _changed_neighbour(gpu, scale: float) -> None:
    """The head's fused 20% slower, and every sample right after it 1% slower: the cross-talk a
    changed kernel left on the next one on the H200 (docs/method.md, "Exchangeable sides")."""
    gpu.ms = lambda name, call: scale * (1.2 if name == "head:fused" else 1.0)
    gpu.context = lambda name, previous, captured: 1.01 if previous == "head:fused" else 1.0


def test_a_changed_neighbour_moves_no_other_benchmark(gpu, repo: Path, tmp_path: Path):
    # 0.04 ms: short kernels, spread over the round, where fixed places let the cross-talk through
    # (the control below); a round of long ones, side by side, did not show it even in fixed places.
    _changed_neighbour(gpu, 0.04)
    result = _ab(repo, tmp_path / "ab")
    assert result.exit_code == 1, result.output  # fused: slower, and confirmed
    rows = _rows(tmp_path / "ab")
    for case in ("odd", "square"):
        assert rows[(case, "fused")]["fails"]
        for kernel in OTHERS:
            row = rows[(case, kernel)]
            low, high = row["ci"]
            assert row["verdict"] == "unchanged" and low < 1 < high, (case, kernel, row["reason"])


@pytest.mark.slow
def test_with_each_side_in_fixed_places_the_neighbour_would_fail_the_check(
    gpu, repo: Path, tmp_path: Path, monkeypatch
):
    # The control: the order as it was before the sides' places were drawn, the two sides of a
    # short benchmark always in the places they are listed in, each beside its own side's
    # neighbours. The same cross-talk then fails an unchanged benchmark, as on the H200.
    monkeypatch.setattr(measure, "side_places", listed_places)
    _changed_neighbour(gpu, 0.04)
    result = _ab(repo, tmp_path / "ab")
    assert result.exit_code == 1, result.output
    rows = _rows(tmp_path / "ab")
    moved = [key for key, row in rows.items() if key[1] in OTHERS and row["verdict"] != "unchanged"]
    assert moved, {key: row["reason"] for key, row in rows.items()}


def _later_capture_slower(gpu) -> None:
    """An A/A on a GPU where, of a benchmark's two captures, the one made later runs 1% slower (it
    got the memory the earlier one left behind)."""

    def later_is_slower(name, previous, captured):
        side, _, kernel = name.partition(":")
        other = captured[f"{'head' if side == 'base' else 'base'}:{kernel}"]
        return 1.01 if captured[name].graph > other.graph else 1.0

    gpu.context = later_is_slower


@pytest.mark.slow
def test_the_side_captured_later_is_drawn_afresh(gpu, repo: Path, tmp_path: Path):
    # Drawn afresh every block, the 1% lands on either side: the interval widens around no change
    # (a row may stay undecided) instead of narrowing onto a slowdown.
    _later_capture_slower(gpu)
    result = _ab(repo, tmp_path / "ab", "--max-samples", "400")
    assert result.exit_code == 0, result.output
    for key, row in _rows(tmp_path / "ab").items():
        low, high = row["ci"]
        assert row["verdict"] in ("unchanged", "inconclusive") and low < 1 < high, (key, row["reason"])


def test_captured_in_the_listed_order_the_head_would_fail(gpu, repo: Path, tmp_path: Path, monkeypatch):
    # The control: every capture made in the order the benchmarks are listed, base before head.
    import random

    monkeypatch.setattr(random.Random, "sample", lambda self, population, k: list(population)[:k])
    _later_capture_slower(gpu)
    result = _ab(repo, tmp_path / "ab", "--max-samples", "400")
    assert result.exit_code == 1, result.output
    rows = _rows(tmp_path / "ab")
    assert all(row["verdict"] == "regression" for row in rows.values()), {k: r["reason"] for k, r in rows.items()}


def test_the_first_captures_of_a_case_are_made_in_a_drawn_order(gpu, project: Path):
    # The first block's captures, before any re-capture: in listed order every base would be
    # captured before its head, in every case and every run.
    subject = test_runner_cpu._subject(project)
    (case,) = single_cases([subject.suites["tiny"]])[:1]
    head_first = []
    listed = [f"{side}:{k}" for side in ("base", "head") for k in ("fused", "eager", "gemm", "copy")]
    for seed in range(8):
        sides = runner.LocalSides({"base": subject, "head": subject}, RunSettings(samples=10, seed=seed))
        keys, failed = sides.prepare(case)
        assert not failed and keys == listed  # captured in a drawn order, listed as before
        head_first += [sides.captured[f"head:{k}"].graph < sides.captured[f"base:{k}"].graph for k in ("fused", "gemm")]
    assert any(head_first) and not all(head_first), head_first


def _first_head_load_slower(gpu, noted: Path) -> None:
    """An A/A on a GPU where the head's first load of its kernels runs 1% slower for as long as
    it lasts (on the H200 a load of identical code moved a 36 us kernel by up to 0.9%). A load
    is a module in a process (the worker that measures): the first is noted in a file."""

    def load_bias(name, previous, captured):
        side, load = name.partition(":")[0], f"{os.getpid()} {gpu.modules[captured[name].graph]}"
        if side != "head":
            return 1.0
        if not noted.exists():
            noted.write_text(load)
        return 1.01 if noted.read_text() == load else 1.0

    gpu.context = load_bias


# The first load of the head's kernels is the first case's, and the second case never runs on it:
# the tests of that load time the first case alone.
FIRST_CASE = ("--case", "odd")


def test_the_second_ab_times_each_side_loaded_anew(gpu, repo: Path, tmp_path: Path):
    _first_head_load_slower(gpu, tmp_path / "first-load")
    result = _ab(repo, tmp_path / "ab", *FIRST_CASE)
    assert result.exit_code == 0, result.output
    fused = _rows(tmp_path / "ab")[("odd", "fused")]
    assert fused["verdict"] == "regression" and not fused["fails"] and "NOT confirmed" in fused["reason"]


def test_on_the_same_loads_the_second_ab_would_confirm_the_load(gpu, repo: Path, tmp_path: Path, monkeypatch):
    # The control: the second A/B in the first A/B's worker, on its loads.
    from perfbot.measuring import worker_sides

    opened, kept = worker_sides.both_sides, []

    @contextmanager
    def reused(kernels):
        if kept:
            yield kept[0]
            return
        with opened(kernels) as worker:
            closing, worker.close = worker.close, lambda: None  # kept open for the second A/B
            kept.append(worker)
            try:
                yield worker
            finally:
                worker.close = closing

    monkeypatch.setattr(worker_sides, "both_sides", reused)
    _first_head_load_slower(gpu, tmp_path / "first-load")
    result = _ab(repo, tmp_path / "ab", *FIRST_CASE)
    assert result.exit_code == 1, result.output
    assert "confirmed by a second interleaved round" in _rows(tmp_path / "ab")[("odd", "fused")]["reason"]


def test_which_side_is_checked_and_loaded_first_is_drawn(gpu, project: Path, monkeypatch):
    # A kernel compiles, and Triton loads it, on its first call: the correctness check. In listed
    # order the base's would always come first. The inputs stay the base's either way.
    base = test_runner_cpu._subject(project)
    head = test_runner_cpu.load_subject(project / "kernels", instance="head")  # modules of its own
    (case,) = single_cases([base.suites["tiny"]])[:1]
    checked = runner.check_group
    firsts, judges = [], []

    def watched(group, generator, judge, *limit, **options):
        firsts.append(group[0].side)
        judges.append(judge)
        return checked(group, generator, judge, *limit, **options)

    monkeypatch.setattr(runner, "check_group", watched)
    assert head.subject is not base.subject
    for seed in range(8):
        sides = runner.LocalSides({"base": base, "head": head}, RunSettings(samples=10, seed=seed))
        keys, failed = sides.prepare(case)
        assert not failed and [key.partition(":")[0] for key in keys] == ["base"] * 4 + ["head"] * 4
    assert set(firsts) == {"base", "head"} and all(judge is base.subject for judge in judges)


def _each_load_biased(gpu, seen: Path, seed: int = 1) -> None:
    """An A/A on a GPU where every load of a side's kernels runs 1% slower or 1% faster (a coin
    per load) for as long as it lasts: on the H200 two loads of identical code put a 36 us
    kernel up to 0.9% apart (docs/method.md, "Exchangeable sides"). A load is one in a process
    (the worker that measures): each is noted in `seen`, and its coin is the next of the run's."""
    bias: dict[str, float] = {}

    def load_bias(name, previous, captured):
        load = gpu.loads[captured[name].graph]
        assert load, name  # every benchmark runs from a load of its side's kernels
        mine = f"{os.getpid()} {load}"
        if mine not in bias:
            drawn = len(seen.read_text().splitlines()) if seen.exists() else 0
            bias[mine] = 1.01 if random.Random(f"{seed}/{drawn}").random() < 0.5 else 0.99
            with seen.open("a") as noted:
                noted.write(f"{mine}\n")
        return bias[mine]

    gpu.context = load_bias


def test_a_sides_kernels_are_loaded_anew_every_few_blocks(gpu, repo: Path, tmp_path: Path):
    _each_load_biased(gpu, tmp_path / "loads")
    result = _ab(repo, tmp_path / "ab")
    assert result.exit_code == 0, result.output
    for key, row in _rows(tmp_path / "ab").items():
        low, high = row["ci"]
        assert row["verdict"] == "unchanged" and low < 1 < high, (key, row["reason"])
    loaded = set((tmp_path / "loads").read_text().splitlines())
    assert len(loaded) > 8  # two sides, two cases: more loads than one each


def test_on_one_load_per_side_the_loads_bias_would_move_rows(gpu, repo: Path, tmp_path: Path, monkeypatch):
    # The control: each side's kernels loaded once for the first A/B, as before. Some row's two
    # sides then run 2% apart the whole A/B: a load of identical code reads as a slowdown. (The
    # second A/B runs in a worker of its own, on loads of its own, whose coins decide whether it
    # confirms.)
    monkeypatch.setattr(loads, "BLOCKS_PER_LOAD", 10**9)
    _each_load_biased(gpu, tmp_path / "loads")
    result = _ab(repo, tmp_path / "ab")
    assert result.exit_code in (0, 1), result.output
    moved = [key for key, row in _rows(tmp_path / "ab").items() if row["verdict"] != "unchanged"]
    assert moved


def test_the_loads_let_go_are_held_until_the_cases_graphs_are_gone(gpu, project: Path):
    # A CUDA graph calls into the load it was captured from, and Triton unloads a kernel it no
    # longer references: what a forget let go must outlive the graphs captured from it.
    base = test_runner_cpu._subject(project)
    head = test_runner_cpu.load_subject(project / "kernels", instance="held")
    (case,) = single_cases([base.suites["tiny"]])[:1]
    sides = runner.LocalSides({"base": base, "head": head}, RunSettings(samples=10))
    keys, failed = sides.prepare(case)
    assert not failed and len(sides.kernels) == 2  # one stand-in kernel per side
    for _ in range(2 * loads.BLOCKS_PER_LOAD):
        sides.recapture(keys)
    assert len(sides.held) == 2 and all(len(one) == 2 for one in sides.held)  # both sides, each time
    assert len(set(gpu.loads.values())) == 2 + 2 * 2  # the first loads, then two fresh ones per side
    sides.finish({key: [1.0] * 10 for key in keys}, [])
    assert sides.held == [] and sides.captured == {}
