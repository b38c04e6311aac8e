"""The selftest's judging, on synthetic rounds (the measuring half needs the GPU)."""

import random

from click.testing import CliRunner

from perfbot import selftest
from perfbot.cli import perfbot
from perfbot.thresholds import load_policy
from tests.conftest import HAS_GPU, ROOT

POLICY = load_policy(ROOT / "thresholds.yaml")


def _rounds(n: int, noise: float, levels: tuple[float, ...], seed: int = 0) -> list[dict[str, list[float]]]:
    rng = random.Random(seed)
    draw = lambda scale: [scale * (1 + noise * rng.gauss(0, 1)) for _ in range(10)]  # noqa: E731
    return [{selftest.BASE: draw(1.0), selftest.TWIN: draw(1.0),
             **{selftest.slowed(level): draw(1 + level / 100) for level in levels}} for _ in range(n)]


def test_quiet_runner_no_false_alarms_and_clear_detections():
    result = selftest.tally(_rounds(40, 0.001, (0.5, 2.0, 5.0)), (0.5, 2.0, 5.0), POLICY)
    assert result.false_alarms == selftest.Flagged(rounds=40, flagged=0, pairs=20, confirmed=0)
    by_level = {l.nominal_percent: l for l in result.levels}
    assert by_level[2.0].detections.flagged == 40 and by_level[5.0].detections.confirmed == 20
    assert abs(by_level[2.0].measured_percent - 2.0) < 0.2  # measured, not nominal
    assert "interleaved" in result.rule
    assert result.to_json()["levels"][1]["detections"]["rate"] == 1.0
    assert result.to_json()["levels"][1]["detections"]["confirmed_rate"] == 1.0


def test_noisy_runner_misses_small_slowdowns():
    result = selftest.tally(_rounds(30, 0.05, (1.0,)), (1.0,), POLICY)
    assert result.levels[0].detections.flagged < 15  # 1% under 5% noise with 10 + 10 samples: mostly missed


def test_a_pair_flags_only_when_its_second_round_confirms_the_first():
    flags = selftest.Flagged.of([True, False, True, True, False, True, True])  # the odd last round has no pair
    assert (flags.rounds, flags.flagged, flags.pairs, flags.confirmed) == (7, 5, 3, 1)
    assert flags.to_json()["confirmed_rate"] == 1 / 3


def test_cli_bad_levels_and_no_gpu(project):
    result = CliRunner().invoke(perfbot, ["selftest", "--project", str(project), "--levels", "1,abc"])
    assert result.exit_code == 2 and "--levels" in result.output
    result = CliRunner().invoke(perfbot, ["selftest", "--project", str(project), "--levels", "150"])
    assert result.exit_code == 2
    if not HAS_GPU:
        result = CliRunner().invoke(perfbot, ["selftest", "--project", str(project), "--rounds", "5"])
        assert result.exit_code == 3 and "no CUDA GPU" in result.output
