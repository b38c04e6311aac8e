"""`perfbot selftest`'s interference check on the CPU: one implementation slowed on one side of an
A/A, every other one's ratio reported as cross-talk. The GPU's primitives are replaced
(tests/fake_gpu.py) by one whose sample right after the slowed kernel runs 1% slower: the check
must find that cross-talk when the sides sit in fixed places, and none once they are drawn."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.deciding.thresholds import load_policy
from perfbot.loading.package import load_subject
from perfbot.measuring import interference, measure
from perfbot.measuring.selftest import BASE_SLEEP_CYCLES
from tests.fake_gpu import listed_places
from tests.test_runner_cpu import TINY

SUITES = TINY + "    - {name: wide, M: 16, K: 32, N: 80}\n"  # square has a case either side
KERNEL_MS = 0.04  # spread over the round, as short kernels are
NS_PER_CYCLE = 0.5


@pytest.fixture
def slowed_gpu(gpu, monkeypatch):
    """Every sample KERNEL_MS plus its capture's sleep; a sample right after the slowed one (the
    sleep longer than the shortest both sides carry), 1% slower."""
    import torch

    slept: list[int] = []
    cycles_of: dict[int, int] = {}
    monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: slept.append(cycles))
    fake_capture = measure.capture

    def capture(fn, warmup_calls, offset_bytes=0):
        captured = fake_capture(fn, warmup_calls, offset_bytes)
        cycles_of[captured.graph] = slept[-1] if slept else 0  # what its one captured call slept
        slept.clear()
        return captured

    def context(name, previous, captured):
        own = cycles_of[captured[name].graph] * NS_PER_CYCLE * 1e-6 / KERNEL_MS
        after_sleep = previous is not None and cycles_of[captured[previous].graph] > BASE_SLEEP_CYCLES
        return (1 + own) * (1.01 if after_sleep else 1.0)

    monkeypatch.setattr(measure, "capture", capture)
    gpu.ms = lambda name, call: KERNEL_MS
    gpu.context = context
    return gpu


def _check(project: Path, rounds: int = 200) -> interference.Interference:
    (project / "kernels" / "suites.yaml").write_text(SUITES)
    loaded = load_subject(project / "kernels")
    policy = load_policy(project / "thresholds.yaml")
    return interference.measure_interference(loaded, loaded.case("tiny", "square"), "fused", 10, rounds, policy)


def test_the_check_measures_the_case_and_its_neighbours_and_finds_no_cross_talk(slowed_gpu, project: Path):
    crossed = _check(project)
    assert crossed.slowed.label == "fused on tiny/square"
    assert 9 < crossed.slowed.percent < 11  # the injection, as measured
    assert {(m.case, m.benchmark) for m in crossed.others} == {
        (case, kernel) for case in ("odd", "square", "wide") for kernel in ("fused", "eager", "gemm", "copy")
    } - {("square", "fused")}
    assert all(m.rounds == 200 for m in (crossed.slowed, *crossed.others))
    # Drawn afresh, the 1% after the slowed kernel lands on either side: it spreads the ratios
    # around no change (of 11 intervals at 99%, one may leave it by chance; the control's left by far).
    assert sum(m.surely_moved for m in crossed.others) <= 1, crossed.others
    largest = crossed.largest
    assert largest is not None and abs(largest.percent) < 0.5, largest


def test_with_the_sides_in_fixed_places_the_check_finds_the_cross_talk(slowed_gpu, project: Path, monkeypatch):
    monkeypatch.setattr(measure, "side_places", listed_places)
    crossed = _check(project)
    largest = crossed.largest
    assert largest is not None and largest.case == "square" and abs(largest.percent) > 0.3, largest
    assert largest.surely_moved  # the interval says so


def test_selftest_prints_and_records_the_largest_cross_talk(slowed_gpu, project: Path, tmp_path: Path, monkeypatch):
    from perfbot.measuring import selftest

    (project / "kernels" / "suites.yaml").write_text(SUITES)
    # The checks themselves are tested elsewhere: here, few and quick.
    monkeypatch.setattr(selftest, "measure_checks", lambda *args, **kwargs: [{"A": [1.0] * 48, "A2": [1.0] * 48}] * 4)
    out = tmp_path / "selftest.json"
    args = ["selftest", "--project", str(project), "--suite", "tiny", "--case", "square", "--levels", "1"]
    monkeypatch.setattr(selftest, "tally", lambda *a: selftest.SelftestResult(_no_flags(), (), "rule", KERNEL_MS))
    result = CliRunner().invoke(perfbot, [*args, "--checks", "4", "--interference-rounds", "100", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "interference: fused on tiny/square slowed by +" in result.output
    assert "largest cross-talk: " in result.output and "the interleaved warn threshold of 0.25%" in result.output
    record = json.loads(out.read_text())["interference"]
    assert record["slowed"]["benchmark"] == "fused" and record["largest_cross_talk_percent"] < 0.5
    assert len(record["surely_moved"]) <= 1 and "surely moved" in result.output
    assert len(record["others"]) == 11 and all(row["rounds"] == 100 for row in record["others"])
    skipped = CliRunner().invoke(perfbot, [*args, "--checks", "4", "--skip-kernel", "nope"])
    assert skipped.exit_code == 2 and "unknown implementation 'nope'" in skipped.output


def _no_flags():
    from perfbot.measuring.selftest import Flagged

    return Flagged(4, 0, 2, 0)


@pytest.mark.parametrize(
    ("percent", "low", "high", "hint"),
    [(-0.37, -0.77, 0.19, True), (0.12, -0.2, 0.4, False), (0.6, 0.3, 0.9, False)],
    ids=["noise-past-warn", "below-warn", "surely-moved"],
)
def test_the_summary_says_when_the_largest_move_is_only_noise(percent, low, high, hint, capsys):
    from perfbot.commands.selftest import print_interference

    slowed = interference.Moved("decode", "m16", "fused", 10.0, 9.3, 10.4, 400)
    largest = interference.Moved("decode", "m1", "fused-pointer", percent, low, high, 400)
    quiet = interference.Moved("decode", "m1", "gemm", 0.01, -0.3, 0.3, 400)
    print_interference(interference.Interference(slowed, (quiet, largest), 0.99), 0.25)
    said = " ".join(capsys.readouterr().out.split())
    assert f"largest cross-talk: {abs(percent):.2f}% (fused-pointer on decode/m1)" in said
    assert ("NOT below" in said) == (abs(percent) >= 0.25)
    assert ("more --interference-rounds narrow it" in said) == hint, said
