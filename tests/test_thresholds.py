from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.errors import BadInput
from perfbot.thresholds import load_policy
from tests.conftest import ROOT


def test_the_repository_policy():
    policy = load_policy(ROOT / "thresholds.yaml")
    fused = policy.rule_for("fused", "models", "bfloat16", "NVIDIA H200", {"M": 8192})
    assert (fused.fail_percent, fused.warn_percent, fused.alpha, fused.min_samples) == (6.0, 3.0, 0.01, 10)
    assert policy.rule_for("compiled[tanh]", "models", "bfloat16", "NVIDIA H200", {}).fail_percent == 10.0
    assert policy.rule_for("fused", "models", "bfloat16", "NVIDIA H200", {}, interleaved=True).fail_percent == 0.5


def test_overrides_match_on_every_key_and_later_ones_win(tmp_path: Path):
    path = tmp_path / "t.yaml"
    path.write_text(
        "version: 1\n"
        "defaults: {fail_percent: 5, warn_percent: 2, alpha: 0.01, min_samples: 10}\n"
        "overrides:\n"
        "  - match: {gpu: 'NVIDIA A100*', dtype: float16}\n    fail_percent: 8\n"
        "  - match: {shape: {M: 16}, suite: decode}\n    fail_percent: 9\n    min_samples: 20\n"
        "  - match: {kernel: 'fused*', shape: {M: 16}}\n    fail_percent: 7\n"
    )
    policy = load_policy(path)
    assert policy.rule_for("eager", "a100", "float16", "NVIDIA A100-SXM4-80GB", {"M": 512}).fail_percent == 8
    assert policy.rule_for("eager", "a100", "bfloat16", "NVIDIA A100-SXM4-80GB", {"M": 512}).fail_percent == 5
    decode = policy.rule_for("eager", "decode", "bfloat16", "NVIDIA H200", {"M": 16, "K": 1})
    assert (decode.fail_percent, decode.min_samples) == (9, 20)
    assert policy.rule_for("fused", "decode", "bfloat16", "NVIDIA H200", {"M": 16}).fail_percent == 7


GOOD_DEFAULTS = "defaults: {fail_percent: 5, warn_percent: 2, alpha: 0.01, min_samples: 10}\n"


@pytest.mark.parametrize(
    "text,words",
    [
        ("version: 1\ndefualts: {}\n", "unknown key defualts"),
        ("version: 2\n" + GOOD_DEFAULTS, "version must be 1"),
        ("version: 1\ndefaults: {fail_percent: 5, warn_percent: 2, alpha: 0.01}\n", "defaults.min_samples is missing"),
        ("version: 1\ndefaults: {fail_percent: five, warn_percent: 2, alpha: 0.01, min_samples: 10}\n", "defaults.fail_percent must be a number"),
        ("version: 1\ndefaults: {fail_percent: 150, warn_percent: 2, alpha: 0.01, min_samples: 10}\n", "between 0 and 100"),
        ("version: 1\ndefaults: {fail_percent: 2, warn_percent: 5, alpha: 0.01, min_samples: 10}\n", "warn_percent must be between 0 and fail_percent"),
        ("version: 1\ndefaults: {fail_percent: 5, warn_percent: 2, alpha: 1.5, min_samples: 10}\n", "alpha must be between 0 and 1"),
        ("version: 1\ndefaults: {fail_percent: 5, warn_percent: 2, alpha: 0.01, min_samples: 2.5}\n", "min_samples must be an integer"),
        ("version: 1\ndefaults: {fail_percent: 5, warn_percent: 2, alpha: 0.01, min_samples: 1}\n", "min_samples must be at least 3"),
        ("version: 1\n" + GOOD_DEFAULTS + "overrides:\n  - {fail_percent: 3}\n", "overrides[0] needs a non-empty match"),
        ("version: 1\n" + GOOD_DEFAULTS + "overrides:\n  - {match: {colour: red}, fail_percent: 3}\n", "unknown key overrides[0].match.colour"),
        ("version: 1\n" + GOOD_DEFAULTS + "overrides:\n  - {match: {kernel: fused}, speed: 3}\n", "unknown key overrides[0].speed"),
        ("version: 1\n" + GOOD_DEFAULTS + "overrides:\n  - {match: {kernel: fused}}\n", "changes nothing"),
        ("version: 1\n" + GOOD_DEFAULTS + "overrides:\n  - {match: {shape: 16}, fail_percent: 3}\n", "shape must map"),
        ("version: 1\n" + GOOD_DEFAULTS + "interleaved: {fail_percent: -1}\n", "interleaved.fail_percent"),
        ("- 1\n- 2\n", "expected a mapping"),
        ("version: [1\n", "cannot read it as YAML"),
    ],
)
def test_bad_policies_name_the_file_and_key(tmp_path: Path, text: str, words: str):
    path = tmp_path / "thresholds.yaml"
    path.write_text(text)
    with pytest.raises(BadInput) as error:
        load_policy(path)
    assert words in str(error.value)
    assert str(path) in str(error.value)


def test_cli_bad_thresholds_exit_2(tmp_path: Path):
    from tests.helpers import make_results
    from perfbot import results

    path = tmp_path / "r.json"
    results.save(make_results(seed=1), path)
    bad = tmp_path / "t.yaml"
    bad.write_text("version: 1\n")
    result = CliRunner().invoke(perfbot, ["compare", str(path), str(path), "--thresholds", str(bad)])
    assert result.exit_code == 2 and "defaults" in result.output
    result = CliRunner().invoke(perfbot, ["compare", str(path), str(path), "--thresholds", str(tmp_path / "none.yaml")])
    assert result.exit_code == 2 and "no such file" in result.output
