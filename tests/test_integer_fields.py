"""An integer a file gives is an integer: `1.0` and `true` are refused, exit 2 in one line, in
every kind of file perfbot reads. A format's or a version's number (a pydantic Literal, which took
both for 1 even in strict mode: `version: 1.0` passed in thresholds.yaml) and every other integer
field (strict `int`, which never took them) alike."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.errors import BadInput
from perfbot.records import results
from tests.conftest import ROOT
from tests.helpers import make_results
from tests.test_hostile_subject import PYPROJECT, _project

NOT_INTEGERS = pytest.mark.parametrize("value", [1.0, True], ids=["float", "bool"])
THRESHOLDS = {
    "version": 1,
    "defaults": {"fail_percent": 5, "warn_percent": 2, "alpha": 0.01, "min_samples": 10},
    "overrides": [{"match": {"kernel": "fused"}, "min_samples": 12}],
}


def _cli(*args: str | Path):
    return CliRunner().invoke(perfbot, [str(arg) for arg in args])


def _refused(done, place: str) -> None:
    assert done.exit_code == 2, done.output
    line = done.stderr.strip()
    assert "\n" not in line and line.startswith("perfbot: error: "), done.stderr
    assert f"{place}: should be a valid integer" in line, line


def _same_kind(value: Any, like: int) -> Any:
    """`value` standing in for the integer `like`: 1.0 for 1 becomes 3.0 for 3."""
    return float(like) if isinstance(value, float) else True


# --- through the CLI ---


@NOT_INTEGERS
@pytest.mark.parametrize(
    "place,edit",
    [
        ("version", lambda d, v: d.update(version=_same_kind(v, 1))),
        ("defaults.min_samples", lambda d, v: d["defaults"].update(min_samples=_same_kind(v, 10))),
        ("overrides[0].min_samples", lambda d, v: d["overrides"][0].update(min_samples=_same_kind(v, 12))),
    ],
)
def test_thresholds(tmp_path: Path, value: Any, place: str, edit: Callable):
    run = tmp_path / "run.json"
    results.save(make_results(seed=1), run)
    policy = json.loads(json.dumps(THRESHOLDS))
    (tmp_path / "t.yaml").write_text(json.dumps(policy))  # JSON is YAML
    assert _cli("compare", run, run, "--thresholds", tmp_path / "t.yaml").exit_code == 0
    edit(policy, value)
    (tmp_path / "t.yaml").write_text(json.dumps(policy))
    _refused(_cli("compare", run, run, "--thresholds", tmp_path / "t.yaml"), place)


def test_thresholds_written_by_hand_as_yaml(tmp_path: Path):
    """The finding, as a user writes it."""
    run = tmp_path / "run.json"
    results.save(make_results(seed=1), run)
    text = (ROOT / "thresholds.yaml").read_text()
    assert re.search(r"^version: 1$", text, re.M)
    for version in ("1.0", "true", "1e0"):
        (tmp_path / "t.yaml").write_text(re.sub(r"^version: 1$", f"version: {version}", text, flags=re.M))
        _refused(_cli("compare", run, run, "--thresholds", tmp_path / "t.yaml"), "version")


@NOT_INTEGERS
@pytest.mark.parametrize(
    "place,edit",
    [
        ("benchmarks[0].shape.M", lambda d, v: d["benchmarks"][0]["shape"].update(M=_same_kind(v, 16))),
        ("benchmarks[0].flops", lambda d, v: d["benchmarks"][0].update(flops=_same_kind(v, 10**9))),
        ("settings.samples", lambda d, v: d["settings"].update(samples=_same_kind(v, 30))),
    ],
)
def test_results(tmp_path: Path, value: Any, place: str, edit: Callable):
    data = json.loads(results.to_text(make_results(seed=1)))
    edit(data, value)
    (tmp_path / "run.json").write_text(json.dumps(data))
    _refused(_cli("show", tmp_path / "run.json"), place)


@NOT_INTEGERS
def test_a_results_files_format(tmp_path: Path, value: Any):
    data = json.loads(results.to_text(make_results(seed=1)))
    data["format"] = _same_kind(value, data["format"])
    (tmp_path / "run.json").write_text(json.dumps(data))
    done = _cli("show", tmp_path / "run.json")
    assert done.exit_code == 2 and "is not supported by this perfbot" in done.stderr, done.output


@NOT_INTEGERS
@pytest.mark.parametrize("with_steps", [False, True], ids=["acknowledgements", "reported steps"])
def test_a_stores_own_files(tmp_path: Path, value: Any, with_steps: bool):
    from perfbot.history import acknowledgements, steps
    from tests.history_store import make_runs, write_store

    store = write_store(tmp_path / "store", make_runs(3, seed=3))
    name = steps.STATE_FILE if with_steps else acknowledgements.FILE
    (store / name).write_text(json.dumps({"format": 1}))
    assert _cli("history", "--store", store, "--check").exit_code == 0
    (store / name).write_text(json.dumps({"format": value}))
    _refused(_cli("history", "--store", store, "--check"), "format")


@NOT_INTEGERS
def test_a_steps_file(tmp_path: Path, value: Any):
    from tests.test_steps_file import _written

    data = _written(tmp_path)
    data["format"] = value
    (tmp_path / "steps.json").write_text(json.dumps(data))
    done = _cli(
        "history", "bisect-steps", "--steps", tmp_path / "steps.json", "--runner", "h200", "--out-dir", tmp_path
    )
    _refused(done, "format")


@NOT_INTEGERS
@pytest.mark.parametrize("declared_in", ["python", "yaml"])
def test_a_cases_parameter(tmp_path: Path, value: Any, declared_in: str):
    """Not a file of perfbot's own: a suite's case, in YAML or in Python, says its own words."""
    from tests.test_control_characters import YAML_SUBJECT

    if declared_in == "python":
        project = _project(tmp_path, at_import=f"CASES[0].params['n'] = {_same_kind(value, 8)!r}")
    else:
        project = tmp_path
        (tmp_path / "pk").mkdir()
        (tmp_path / "pyproject.toml").write_text(PYPROJECT)
        (tmp_path / "pk" / "__init__.py").write_text(YAML_SUBJECT)
        suites = {"quick": {"dtype": "float32", "cases": [{"name": "c", "n": _same_kind(value, 8)}]}}
        (tmp_path / "pk" / "suites.yaml").write_text(json.dumps(suites))
    done = _cli("suites", "--project", project)
    assert done.exit_code == 2, done.output
    line = done.stderr.strip()
    assert "\n" not in line and line.endswith(
        f"case 'c': parameters must be 1 to 16 integers from 1 to 2^40, got n={_same_kind(value, 8)!r}"
    ), line


# --- files that commands read on the way (a comparison, a bisect's state and its outcome) ---


def _comparison(tmp_path: Path) -> tuple[Path, Callable[[Path], Any]]:
    from perfbot.deciding import comparison

    run, path = tmp_path / "run.json", tmp_path / "comparison.json"
    results.save(make_results(seed=1), run)
    assert _cli("compare", run, run, "--out-json", path).exit_code == 0
    return path, comparison.load


def _bisect_state(tmp_path: Path) -> tuple[Path, Callable[[Path], Any]]:
    from perfbot.jobs.bisect import State

    path = tmp_path / "state.json"
    state = {"version": 1, "repo": "x", "good": "a" * 40, "bad": "b" * 40, "recipe": "r", "probes": {}}
    path.write_text(json.dumps(state))
    return path, State.load


def _bisect_outcome(tmp_path: Path) -> tuple[Path, Callable[[Path], Any]]:
    from perfbot.jobs import bisect_outcome

    path = tmp_path / "outcome.json"
    path.write_text(json.dumps({"format": 1, "result": "culprit", "good": "x", "bad": "y", "message": "m"}))
    return path, bisect_outcome.load


def _declarations(tmp_path: Path) -> tuple[Path, Callable[[Path], Any]]:
    from perfbot.records import declared

    path = tmp_path / "declared.json"
    path.write_text(json.dumps({"format": 1, "suites": {"pr": {"implementations": ["k"], "cases": ["c"]}}}))
    return path, declared.load


REFUSED = {"version": "not a bisect state this perfbot reads"}  # said so, the file's to be deleted


@NOT_INTEGERS
@pytest.mark.parametrize(
    "made,key",
    [
        (_comparison, "format"),
        (_bisect_state, "version"),
        (_bisect_outcome, "format"),
        (_bisect_outcome, "range_size"),
        (_declarations, "format"),
    ],
    ids=["comparison", "bisect state", "bisect outcome", "bisect outcome's range", "declarations"],
)
def test_files_read_on_the_way(tmp_path: Path, value: Any, made: Callable, key: str):
    path, load = made(tmp_path)
    load(path)  # as written, it loads
    data = json.loads(path.read_text())
    data[key] = _same_kind(value, data.get(key, 1) or 1)
    path.write_text(json.dumps(data))
    with pytest.raises(BadInput, match=REFUSED.get(key, rf"{key}: should be a valid integer")):
        load(path)


def test_every_integer_literal_of_a_file_takes_only_integers():
    """The rule in one place (schema.IntOnly): a Literal of integers in perfbot's records without
    it would take 1.0 and true again."""
    for path in sorted((ROOT / "perfbot").rglob("*.py")):
        text = path.read_text()
        literals = re.findall(r"Literal\[\s*-?\d[^\]]*\]", text)
        guarded = re.findall(r"Annotated\[Literal\[\s*-?\d[^\]]*\], IntOnly\]", text)
        assert len(literals) == len(guarded), f"{path.relative_to(ROOT)}: a Literal of integers without IntOnly"
