"""One rule for control characters (perfbot/characters.py; docs/files.md, "Control characters"):
C0, DEL and C1, the line and paragraph separators, the bidirectional controls and lone
surrogates. Every input surface refuses a name or a one-line text that holds one, exit 2 in one
line, through the real CLI; the line shows the character escaped, and nothing prints it raw (a
C1 CSI, U+009B, once reached the terminal from `perfbot suites` as the start of an escape)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from perfbot import characters
from perfbot.cli import perfbot
from perfbot.output.markdown import markdown_escape
from perfbot.records import results
from perfbot.records.compiled import Compiled
from tests.compiled_records import DECODE_BLOCK_K_128
from tests.helpers import make_results
from tests.history_store import make_runs, write_store
from tests.test_hostile_subject import PYPROJECT, _project

# One of each kind the rule adds to C0 and DEL: a terminal escape, a line break, a reordering.
FOUND = {"C1 CSI": "\x9b", "NEL": "\x85", "RLO": "\u202e", "line separator": "\u2028"}
EACH = pytest.mark.parametrize("char", list(FOUND.values()), ids=list(FOUND))


def _refused(done, char: str, shown: bool = True) -> str:
    """The one error line of a refusal that printed nothing raw; the character, where the line
    shows the value, shown escaped."""
    output = done.stdout + done.stderr
    assert done.exit_code == 2, output
    assert char not in output, output
    line = done.stderr.strip()
    assert "\n" not in line and line.startswith("perfbot: error: "), done.stderr
    assert not shown or characters.escaped(char) in line, line
    return line


def _cli(*args: str | Path):
    return CliRunner().invoke(perfbot, [str(arg) for arg in args])


# --- the definition ---


@pytest.mark.parametrize(
    "code",
    [
        *range(0x20),
        0x7F,
        *range(0x80, 0xA0),
        0x061C,
        0x200E,
        0x200F,
        0x2028,
        0x2029,
        *range(0x202A, 0x202F),
        *range(0x2066, 0x206A),
        0xD800,
        0xDFFF,
    ],
)
def test_each_control_character_is_one(code: int):
    assert characters.has_control(f"a{chr(code)}b")
    assert characters.blanked(f"a{chr(code)}b") == "a b"
    assert not characters.has_control(characters.escaped(chr(code)))


@pytest.mark.parametrize("code", [0x20, 0x7E, 0xA0, 0xE9, 0x200B, 0x200D, 0x2027, 0x202F, 0x2065, 0x206A, 0xFEFF])
def test_characters_beside_them_and_joiners_are_not(code: int):
    """The edges of each range, and the invisible joiners and spaces, which move nothing."""
    assert not characters.has_control(f"a{chr(code)}b")


@EACH
def test_markdown_never_carries_one(char: str):
    assert markdown_escape(f"fused{char}31m") == "fused 31m"


# --- the subject's declarations, under check and suites ---

FAMILY = "subjects = [subject]\ndel subject"


@EACH
@pytest.mark.parametrize(
    "parts,commands",
    [
        ({"name": "so{c}ft"}, ("check", "suites")),
        ({"name": "so{c}ft", "at_import": FAMILY}, ("check", "suites")),
        ({"suite": "qu{c}ick"}, ("suites",)),
        ({"case": "c{c}"}, ("suites",)),
        ({"mine": "mi{c}ne"}, ("check",)),
    ],
    ids=["subject", "family", "suite", "case", "implementation"],
)
def test_a_declared_name_holding_one_is_refused(tmp_path: Path, char: str, parts: dict, commands: tuple):
    project = _project(tmp_path, **{part: value.replace("{c}", char) for part, value in parts.items()})
    for command in commands:
        _refused(_cli(command, "--project", project), char)


YAML_SUBJECT = """
import torch
from perfbot import Subject

subject = Subject("t", lambda case, generator: (torch.randn(case.n, generator=generator),),
                  lambda x: x.double() * 2, {"float32": 1e-5}, suites="suites.yaml")

@subject.implementation("mine", under_test=True)
def mine(x):
    return x * 2
"""


@EACH
@pytest.mark.parametrize("place", ["suite", "case", "about"])
def test_a_suites_file_holding_one_is_refused(tmp_path: Path, char: str, place: str):
    named = {"suite": "quick", "case": "c", "about": "small", place: f"{place}{char}x"}
    suite = {"about": named["about"], "dtype": "float32", "cases": [{"name": named["case"], "n": 8}]}
    (tmp_path / "pk").mkdir()
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "pk" / "__init__.py").write_text(YAML_SUBJECT)
    (tmp_path / "pk" / "suites.yaml").write_text(json.dumps({named["suite"]: suite}))  # JSON is YAML
    _refused(_cli("suites", "--project", tmp_path), char)


# --- the files perfbot reads ---


def _benchmark(data: dict) -> dict:
    return data["benchmarks"][0]


RESULTS_PLACES: dict[str, Callable[[dict, str], Any]] = {
    "kernel": lambda d, c: _benchmark(d).update(kernel=f"fused{c}"),
    "compiled kernel": lambda d, c: _benchmark(d)["compiled"]["kernels"][0].update(name=f"_geglu{c}kernel"),
    "compiled arch": lambda d, c: _benchmark(d)["compiled"]["kernels"][0].update(arch=f"sm_90{c}"),
    "environment": lambda d, c: d["environment"].update(driver=f"580{c}"),
    "failure": lambda d, c: d.update(failures=[{"kernel": "k", "shape": {"M": 1}, "dtype": "f", "reason": f"e{c}"}]),
}


@EACH
@pytest.mark.parametrize("place", list(RESULTS_PLACES))
def test_a_results_file_holding_one_is_refused(tmp_path: Path, char: str, place: str):
    run = make_results(seed=1)
    run = replace(run, benchmarks=[replace(run.benchmarks[0], compiled=Compiled([DECODE_BLOCK_K_128]))])
    data = json.loads(results.to_text(run))
    RESULTS_PLACES[place](data, char)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))
    _refused(_cli("show", path), char)
    _refused(_cli("compare", path, path), char)


@EACH
def test_a_thresholds_file_holding_one_is_refused(tmp_path: Path, char: str):
    run = tmp_path / "run.json"
    results.save(make_results(seed=1), run)
    policy = {
        "version": 1,
        "defaults": {"fail_percent": 5, "warn_percent": 2, "alpha": 0.01, "min_samples": 10},
        "overrides": [{"match": {"kernel": f"fused{char}"}, "fail_percent": 8}],
    }
    (tmp_path / "t.yaml").write_text(json.dumps(policy))
    _refused(_cli("compare", run, run, "--thresholds", tmp_path / "t.yaml"), char)


@EACH
@pytest.mark.parametrize("key", ["kernels", "store"])
def test_a_project_path_holding_one_is_refused(tmp_path: Path, char: str, key: str):
    (tmp_path / "pyproject.toml").write_text(PYPROJECT.replace('kernels = "pk"', f"{key} = {json.dumps(f'p{char}k')}"))
    _refused(_cli("suites", "--project", tmp_path), char)


@pytest.fixture(scope="module")
def steps_written(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A steps file as `history --check` writes it (a generated store, checked): written once,
    each test below edits a copy."""
    from tests.test_steps_file import _written

    return json.dumps(_written(tmp_path_factory.mktemp("steps")))


@pytest.mark.xdist_group("control-steps")  # on one worker, which writes the steps file once
@EACH
@pytest.mark.parametrize("field", ["label", "bisect"])
def test_a_steps_file_holding_one_is_refused(steps_written: str, tmp_path: Path, char: str, field: str):
    data = json.loads(steps_written)
    step = data["steps"][0]
    if field == "bisect":
        step["bisect"][-1] += char  # a word of the command bisect-steps prints as it runs
    else:
        step["label"] += char
    (tmp_path / "steps.json").write_text(json.dumps(data))
    _refused(
        _cli("history", "bisect-steps", "--steps", tmp_path / "steps.json", "--runner", "h200", "--out-dir", tmp_path),
        char,
    )


@EACH
@pytest.mark.parametrize("part", ["file", "folder"])
def test_a_stored_run_named_with_one_is_refused(tmp_path: Path, char: str, part: str):
    """A store restored from a cache or an artifact: perfbot prints a stored run's stamp and path."""
    store = write_store(tmp_path / "store", make_runs(2, seed=3))
    stored = sorted(store.glob("*/*.json"))[-1]
    if part == "file":
        stored.rename(stored.with_name(f"2099{char}-{stored.name.split('-', 1)[1]}"))
    else:
        stored.parent.rename(stored.parent.with_name(f"nvidia{char}h200"))
    for args in (["baseline", "show"], ["history", "--check"]):
        _refused(_cli(*args, "--store", store), char, shown=not char.isspace())


# --- what the command line gives ---


@EACH
@pytest.mark.parametrize("option", ["--reason", "--by"])
def test_an_acknowledgement_holding_one_is_refused(tmp_path: Path, char: str, option: str):
    store = write_store(tmp_path / "store", make_runs(2, seed=3))
    step = "0123456789abcdef@20261130T051500.000000Z"
    given = {"--reason": "expected", "--by": "alice", option: f"ok{char}x"}
    line = _refused(
        _cli("history", "ack", "--store", store, "--step", step, "--reason", given["--reason"], "--by", given["--by"]),
        char,
        shown=False,
    )
    assert line.startswith(f"perfbot: error: {option}")


@EACH
def test_a_file_name_holding_one_is_shown_escaped(tmp_path: Path, char: str):
    """A file's name in an error line is the user's own text, shown, not refused: escaped (a
    line break, as every one in an error line, becomes a space)."""
    _refused(_cli("show", tmp_path / f"run{char}31m.json"), char, shown=not char.isspace())


@pytest.mark.slow
def test_suites_prints_no_c1_byte_through_the_real_cli(tmp_path: Path):
    """The finding itself, as a terminal gets it: `perfbot suites` on a family named with a C1 CSI."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    project = _project(tmp_path, name="so\x9b31mft", at_import=FAMILY)
    command = [sys.executable, "-m", "perfbot", "suites", "--project", str(project)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert b"\xc2\x9b" not in done.stdout + done.stderr and b"\x1b" not in done.stdout + done.stderr
    assert done.stderr.decode().endswith("got 'so\\x9b31mft'\n"), done.stderr
