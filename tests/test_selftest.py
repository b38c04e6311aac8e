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
    assert result.false_alarms == 0 and result.rounds == 40
    by_level = {l.nominal_percent: l for l in result.levels}
    assert by_level[2.0].detected == 40 and by_level[5.0].detected == 40
    assert abs(by_level[2.0].measured_percent - 2.0) < 0.2  # measured, not nominal
    assert "interleaved" in result.rule
    assert result.to_json()["levels"][1]["detection_rate"] == 1.0


def test_noisy_runner_misses_small_slowdowns():
    result = selftest.tally(_rounds(30, 0.05, (1.0,)), (1.0,), POLICY)
    assert result.levels[0].detected < 15  # 1% under 5% noise with 10 + 10 samples: mostly missed


def test_cli_bad_levels_and_no_gpu(project):
    result = CliRunner().invoke(perfbot, ["selftest", "--project", str(project), "--levels", "1,abc"])
    assert result.exit_code == 2 and "--levels" in result.output
    result = CliRunner().invoke(perfbot, ["selftest", "--project", str(project), "--levels", "150"])
    assert result.exit_code == 2
    if not HAS_GPU:
        result = CliRunner().invoke(perfbot, ["selftest", "--project", str(project), "--rounds", "5"])
        assert result.exit_code == 3 and "no CUDA GPU" in result.output
