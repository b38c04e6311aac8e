import re
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.deciding.thresholds import changes, load_policy
from perfbot.errors import BadInput
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
        ("version: 1\ndefualts: {}\n", "defualts: unknown key"),
        ("version: 2\n" + GOOD_DEFAULTS, "version: should be 1, got 2"),
        ("version: 1\ndefaults: {fail_percent: 5, warn_percent: 2, alpha: 0.01}\n", "defaults.min_samples: missing"),
        (
            "version: 1\ndefaults: {fail_percent: five, warn_percent: 2, alpha: 0.01, min_samples: 10}\n",
            "defaults.fail_percent: should be a valid number, got 'five'",
        ),
        (
            "version: 1\ndefaults: {fail_percent: 150, warn_percent: 2, alpha: 0.01, min_samples: 10}\n",
            "defaults.fail_percent: should be less than 100, got 150",
        ),
        (
            "version: 1\ndefaults: {fail_percent: 2, warn_percent: 5, alpha: 0.01, min_samples: 10}\n",
            "warn_percent must be between 0 and fail_percent",
        ),
        (
            "version: 1\ndefaults: {fail_percent: 5, warn_percent: 2, alpha: 1.5, min_samples: 10}\n",
            "defaults.alpha: should be less than 1, got 1.5",
        ),
        (
            "version: 1\ndefaults: {fail_percent: 5, warn_percent: 2, alpha: 0.01, min_samples: 2.5}\n",
            "defaults.min_samples: should be a valid integer, got 2.5",
        ),
        (
            "version: 1\ndefaults: {fail_percent: 5, warn_percent: 2, alpha: 0.01, min_samples: 1}\n",
            "defaults.min_samples: should be greater than or equal to 3, got 1",
        ),
        ("version: 1\n" + GOOD_DEFAULTS + "overrides:\n  - {fail_percent: 3}\n", "overrides[0].match: missing"),
        (
            "version: 1\n" + GOOD_DEFAULTS + "overrides:\n  - {match: {colour: red}, fail_percent: 3}\n",
            "overrides[0].match.colour: unknown key",
        ),
        (
            "version: 1\n" + GOOD_DEFAULTS + "overrides:\n  - {match: {kernel: fused}, speed: 3}\n",
            "overrides[0].speed: unknown key",
        ),
        ("version: 1\n" + GOOD_DEFAULTS + "overrides:\n  - {match: {kernel: fused}}\n", "changes nothing"),
        (
            "version: 1\n" + GOOD_DEFAULTS + "overrides:\n  - {match: {shape: 16}, fail_percent: 3}\n",
            "overrides[0].match.shape: should be a mapping (an object), got 16",
        ),
        (
            "version: 1\n" + GOOD_DEFAULTS + "interleaved: {fail_percent: -1}\n",
            "interleaved.fail_percent: should be greater than 0, got -1",
        ),
        ("- 1\n- 2\n", "the thresholds file: should be a mapping (an object), got [1, 2]"),
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


@pytest.mark.parametrize(
    "text,words",
    [
        (
            "version: 1\n" + GOOD_DEFAULTS + "overrides:\n  - {match: {shape: {M: true}}, fail_percent: 3}\n",
            "overrides[0].match.shape.M: should be a valid integer, got True",
        ),
        ("version: 1\nversion: 1\n" + GOOD_DEFAULTS, "duplicate key 'version'"),
        (
            "version: 1\n"
            + GOOD_DEFAULTS
            + "overrides:\n  - {match: {kernel: fused}, fail_percent: 3, fail_percent: 50}\n",
            "duplicate key 'fail_percent'",
        ),
        (
            "version: 1\n" + GOOD_DEFAULTS + "overrides:\n  - &a {match: {kernel: fused}, fail_percent: 3}\n  - *a\n",
            "anchors and aliases",
        ),
        (
            "version: 1\n" + GOOD_DEFAULTS + "interleaved: {warn_percent: 9}\n",
            "interleaved.warn_percent must be between",
        ),
        ("version: 1\n" + GOOD_DEFAULTS.replace("5,", "5.0e+999,"), "defaults.fail_percent: should be less than 100"),
        ("version: 1\n" + GOOD_DEFAULTS.replace("5,", "5e999,"), "defaults.fail_percent: should be a valid number"),
    ],
)
def test_hostile_policies_are_refused_in_one_line(tmp_path: Path, text: str, words: str):
    path = tmp_path / "thresholds.yaml"
    path.write_text(text)
    with pytest.raises(BadInput) as error:
        load_policy(path)
    assert words in str(error.value) and "\n" not in str(error.value)


def test_a_yaml_bomb_is_refused_within_a_second(tmp_path: Path):
    """Nine levels of nine aliases: 387 million strings if expanded (the classic 'billion laughs')."""
    lines = ['a0: &a0 "lol"'] + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    path = tmp_path / "thresholds.yaml"
    path.write_text(
        "version: 1\n" + GOOD_DEFAULTS + "overrides:\n  - match: {kernel: x}\n    fail_percent: 3\n"
        "    bomb: {" + ", ".join(lines) + "}\n"
    )
    started = time.monotonic()
    with pytest.raises(BadInput) as error:
        load_policy(path)
    assert time.monotonic() - started < 1.0
    assert "anchors and aliases" in str(error.value) and len(str(error.value)) < 500


def test_bytes_that_are_not_text(tmp_path: Path):
    path = tmp_path / "thresholds.yaml"
    path.write_bytes(b"version: 1\n\xff\xfe")
    with pytest.raises(BadInput, match="is not UTF-8 text"):
        load_policy(path)


def test_an_over_large_file_is_refused_unread(tmp_path: Path):
    path = tmp_path / "thresholds.yaml"
    path.write_text("version: 1\n" + GOOD_DEFAULTS + "# padding\n" * 200_000)
    with pytest.raises(BadInput, match="over 1 MiB"):
        load_policy(path)


def test_cli_bad_thresholds_exit_2(tmp_path: Path):
    from perfbot.records import results
    from tests.helpers import make_results

    path = tmp_path / "r.json"
    results.save(make_results(seed=1), path)
    bad = tmp_path / "t.yaml"
    bad.write_text("version: 1\n")
    result = CliRunner().invoke(perfbot, ["compare", str(path), str(path), "--thresholds", str(bad)])
    assert result.exit_code == 2 and "defaults" in result.output
    result = CliRunner().invoke(perfbot, ["compare", str(path), str(path), "--thresholds", str(tmp_path / "none.yaml")])
    assert result.exit_code == 2 and "no such file" in result.output


def test_an_override_by_time_applies_to_interleaved_short_kernels_only():
    policy = load_policy(ROOT / "thresholds.yaml")
    shape = {"M": 1, "K": 3072, "N": 24576}
    short_ab = policy.rule_for("fused", "decode", "bfloat16", "NVIDIA H200", shape, True, 0.02)
    decode_ab = policy.rule_for("fused", "decode", "bfloat16", "NVIDIA H200", shape, True, 0.075)
    long_ab = policy.rule_for("fused", "decode", "bfloat16", "NVIDIA H200", shape, True, 0.5)
    short_across_runs = policy.rule_for("fused", "decode", "bfloat16", "NVIDIA H200", shape, False, 0.02)
    unknown_time = policy.rule_for("fused", "decode", "bfloat16", "NVIDIA H200", shape, True)
    assert (short_ab.fail_percent, short_ab.warn_percent) == (2.0, 1.0)
    assert (decode_ab.fail_percent, decode_ab.warn_percent) == (0.5, 0.25)  # a 75 us decode kernel
    assert (long_ab.fail_percent, long_ab.warn_percent) == (0.5, 0.25) == (unknown_time.fail_percent, 0.25)
    assert short_across_runs.fail_percent == 6.0
    compiled = policy.rule_for("compiled", "decode", "bfloat16", "NVIDIA H200", shape, True, 0.02)
    assert compiled.fail_percent == 10.0  # a later override still wins


def test_an_integer_too_long_for_python_is_refused_in_one_line(tmp_path: Path):
    """PyYAML's int() raises ValueError for an integer of over 4300 digits."""
    from perfbot.records import results
    from tests.helpers import make_results

    run, path = tmp_path / "r.json", tmp_path / "thresholds.yaml"
    results.save(make_results(seed=1), run)
    path.write_text(f"x: 1{'0' * 5000}\n")
    result = CliRunner().invoke(perfbot, ["compare", str(run), str(run), "--thresholds", str(path)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"perfbot: error: {path}: cannot read it as YAML: ")
    assert "4300 digits" in result.stderr and result.stderr.count("\n") == 1


# The limits of a rule and of a match, each at its edge (a limit moved by one unit fails here).
def _policy_text(defaults: dict, override: dict | None = None) -> str:
    text = f"version: 1\ndefaults: {defaults}\n".replace("'", "")
    if override is not None:
        text += f"overrides:\n  - {{match: {{kernel: fused}}, {str(override)[1:-1]}}}\n".replace("'", "")
    return text


EDGES_INSIDE = [
    {"fail_percent": 0.01, "warn_percent": 0, "alpha": 0.0001, "min_samples": 3},
    {"fail_percent": 99.99, "warn_percent": 99.99, "alpha": 0.999, "min_samples": 10_000},
]
EDGES_OUTSIDE = [
    ({"fail_percent": 100}, "fail_percent: should be less than 100"),
    ({"fail_percent": 0, "warn_percent": 0}, "fail_percent: should be greater than 0"),
    ({"warn_percent": -0.01}, "warn_percent: should be greater than or equal to 0"),
    ({"alpha": 1}, "alpha: should be less than 1"),
    ({"alpha": 0}, "alpha: should be greater than 0"),
    ({"min_samples": 2}, "min_samples: should be greater than or equal to 3"),
    ({"min_samples": 10_001}, "min_samples: should be less than or equal to 10000"),
]
DEFAULTS = {"fail_percent": 5, "warn_percent": 2, "alpha": 0.01, "min_samples": 10}


@pytest.mark.parametrize("rule", EDGES_INSIDE, ids=["lower", "upper"])
def test_a_rule_at_the_edge_of_every_limit_is_taken_in_defaults_and_overrides(tmp_path: Path, rule: dict):
    """fail_percent in (0, 100), warn_percent in [0, fail_percent], alpha in (0, 1), min_samples
    in [3, 10000]: the defaults and an override take the same edges."""
    path = tmp_path / "thresholds.yaml"
    for text in (_policy_text(rule), _policy_text(DEFAULTS, rule)):
        path.write_text(text)
        got = load_policy(path).rule_for("fused", "s", "float16", "gpu", {})
        assert (got.fail_percent, got.warn_percent, got.alpha, got.min_samples) == tuple(rule.values())


@pytest.mark.parametrize("change,words", EDGES_OUTSIDE, ids=[words for _, words in EDGES_OUTSIDE])
def test_a_rule_just_past_a_limit_is_refused_in_defaults_and_overrides(tmp_path: Path, change: dict, words: str):
    path = tmp_path / "thresholds.yaml"
    for text, where in (
        (_policy_text({**DEFAULTS, **change}), "defaults"),
        (_policy_text(DEFAULTS, change), "overrides[0]"),
    ):
        path.write_text(text)
        with pytest.raises(BadInput, match=re.escape(f"{where}.{words}")):
            load_policy(path)


@pytest.mark.parametrize(
    "match,words",
    [
        ({}, "overrides[0].match: Value should have at least 1 item"),
        ({"shape": {}}, "overrides[0].match.shape: Dictionary should have at least 1 item"),
        (
            {"shape": {f"d{i}": 1 for i in range(17)}},
            "overrides[0].match.shape: Dictionary should have at most 16 items",
        ),
        ({"under_ms": 0}, "overrides[0].match.under_ms: should be greater than 0"),
    ],
    ids=["empty match", "empty shape", "17 dimensions", "under 0 ms"],
)
def test_a_match_that_could_match_everything_or_is_too_large_is_refused(tmp_path: Path, match: dict, words: str):
    path = tmp_path / "thresholds.yaml"
    path.write_text(
        f"version: 1\n{GOOD_DEFAULTS}overrides:\n  - {{match: {match}, fail_percent: 3}}\n".replace("'", "")
    )
    with pytest.raises(BadInput, match=re.escape(words)):
        load_policy(path)


def test_a_match_on_sixteen_dimensions_is_taken(tmp_path: Path):
    shape = {f"d{i}": i + 1 for i in range(16)}
    path = tmp_path / "thresholds.yaml"
    path.write_text(f"version: 1\n{GOOD_DEFAULTS}overrides:\n  - {{match: {{shape: {shape}}}, fail_percent: 3}}\n")
    assert load_policy(path).rule_for("k", "s", "d", "g", shape).fail_percent == 3


def test_under_ms_means_strictly_under():
    """The short-kernel override (under_ms: 0.03) takes a baseline median under 0.03 ms, not one
    of 0.03 ms itself."""
    policy = load_policy(ROOT / "thresholds.yaml")
    shape = {"M": 1, "K": 3072, "N": 24576}
    under = policy.rule_for("fused", "decode", "bfloat16", "NVIDIA H200", shape, True, 0.0299)
    at = policy.rule_for("fused", "decode", "bfloat16", "NVIDIA H200", shape, True, 0.03)
    assert (under.fail_percent, at.fail_percent) == (2.0, 0.5)


def test_an_overrides_min_samples_stays_a_whole_number(tmp_path: Path):
    """A count of samples is an integer (the reason of a short run prints `--samples 40`); the
    percentages are floats, however the file writes them."""
    path = tmp_path / "thresholds.yaml"
    path.write_text(_policy_text(DEFAULTS, {"min_samples": 40, "fail_percent": 8}))
    rule = load_policy(path).rule_for("fused", "s", "float16", "gpu", {})
    assert (rule.min_samples, rule.fail_percent) == (40, 8.0)
    assert type(rule.min_samples) is int and type(rule.fail_percent) is float


def test_changes_lists_each_field_the_other_policy_sets_differently(tmp_path: Path):
    used, other = tmp_path / "used.yaml", tmp_path / "other.yaml"
    used.write_text(_policy_text(DEFAULTS))
    other.write_text(
        _policy_text({**DEFAULTS, "fail_percent": 6}, {"fail_percent": 8}) + "interleaved: {fail_percent: 2.5}\n"
    )
    assert changes(load_policy(used), load_policy(other)) == [
        "defaults.fail_percent: 5 → 6",
        "interleaved.fail_percent: (unset) → 2.5",
        "overrides[0].fail_percent: (unset) → 8",
        "overrides[0].match: (unset) → {'kernel': 'fused'}",
    ]
    assert changes(load_policy(used), load_policy(used)) == []


def test_an_override_whose_shape_differs_in_one_dimension_leaves_the_rule_alone(tmp_path: Path):
    """Every key of a match must hold: the kernel matching is not enough when the shape does not."""
    path = tmp_path / "thresholds.yaml"
    path.write_text(
        f"version: 1\n{GOOD_DEFAULTS}overrides:\n  - {{match: {{kernel: fused, shape: {{M: 16}}}}, fail_percent: 3}}\n"
    )
    policy = load_policy(path)
    assert policy.rule_for("fused", "s", "d", "g", {"M": 16, "N": 8}).fail_percent == 3
    assert policy.rule_for("fused", "s", "d", "g", {"M": 512, "N": 8}).fail_percent == 5
    assert policy.rule_for("fused", "s", "d", "g", {"N": 8}).fail_percent == 5  # no M at all
